"""Showing the service's own validation errors the same way as ours: next to the field."""

from __future__ import annotations

from django import forms

from console.service.errors import Invalid


class WriteOnlyTextarea(forms.Textarea):
    """A textarea for secret-ish text (a CA bundle, environment variables): what was typed is never rendered
    back, not even when the form comes back with an error elsewhere; the user pastes it again."""

    def format_value(self, value):
        return None


def apply_service_errors(form: forms.Form, error: Invalid, field_map: dict[str, str] | None = None) -> None:
    """Attach ``error.field_errors`` to the form's fields (service name → form field via ``field_map``);
    what names no field of the form goes to the form's non-field errors, with the service's message."""
    field_map = field_map or {}
    placed = False
    for name, messages in error.field_errors.items():
        target = field_map.get(name, name)
        if name != "__all__" and target in form.fields:
            for message in messages:
                form.add_error(target, message)
            placed = True
        else:
            for message in messages:
                form.add_error(None, f"{name}: {message}" if name != "__all__" else message)
            placed = True
    if not placed:
        form.add_error(None, error.message)
