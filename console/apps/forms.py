"""The invoke form, generated from an action's input schema.

Each top-level property becomes a field of the matching kind: text (with its format), whole or decimal
number with its bounds, a checkbox (or yes/no/unset when optional without a default), a select for an
enum, a list (one item per line, or checkboxes for a list of enum values), and a JSON box for nested
objects and anything else. A schema the form cannot render field by field (no properties, or a
oneOf/anyOf/allOf/$ref at the top) gets one raw JSON box. Either way the payload is validated against the
schema before anything is sent.
"""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from console.apps import schema as schemas
from console.web.forms import parse_json

ASYNC_TIMEOUT_MIN = 10
ASYNC_TIMEOUT_MAX = 3600
PREFIX = "input"


def renderable(schema: Any) -> bool:
    """Whether the form can offer one field per property."""
    if not isinstance(schema, dict) or not isinstance(schema.get("properties"), dict):
        return False
    if not schema["properties"]:
        return False
    if any(key in schema for key in (*schemas.COMBINATORS, "$ref", "patternProperties")):
        return False
    return schema.get("type", "object") == "object"


class JSONText(forms.CharField):
    """A textarea holding JSON; ``clean`` returns the parsed value (``EMPTY`` when left blank)."""

    EMPTY = object()

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("widget", forms.Textarea(attrs={"rows": 6, "class": "code", "spellcheck": "false"}))
        super().__init__(*args, strip=True, **kwargs)

    def clean(self, value):
        text = super().clean(value)
        if text in (None, ""):
            return self.EMPTY
        return parse_json(text)


class LinesField(forms.CharField):
    """A list of simple values, one per line."""

    def __init__(self, *args, item_type: str = "string", **kwargs):
        self.item_type = item_type
        kwargs.setdefault("widget", forms.Textarea(attrs={"rows": 3}))
        super().__init__(*args, **kwargs)

    def clean(self, value):
        text = super().clean(value) or ""
        items = [line.strip() for line in text.splitlines() if line.strip()]
        convert = {"integer": int, "number": float}.get(self.item_type)
        if convert is None:
            return items
        try:
            return [convert(item) for item in items]
        except ValueError:
            kind = "whole numbers" if self.item_type == "integer" else "numbers"
            raise ValidationError(f"Each line must hold one of the {kind}.") from None


def _choice_value(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _field(name: str, prop: dict, required: bool) -> forms.Field:
    label = prop.get("title") or name
    help_text = prop.get("description") or ""
    notes = schemas.constraints(prop)
    if notes:
        help_text = f"{help_text} ({', '.join(notes)})" if help_text else ", ".join(notes).capitalize()
    common = {"label": label, "help_text": help_text, "required": required}
    has_default = "default" in prop
    default = prop.get("default")
    kind = prop.get("type")
    if isinstance(prop.get("enum"), list) and prop["enum"]:
        choices = [(_choice_value(v), _choice_value(v)) for v in prop["enum"]]
        if not required:
            choices = [("", "—"), *choices]
        return forms.ChoiceField(
            choices=choices, initial=_choice_value(default) if has_default else None, **common
        )
    if kind == "string":
        widget = {
            "date": forms.DateInput(attrs={"type": "date"}),
            "date-time": forms.TextInput(attrs={"placeholder": "2025-01-31T12:00:00Z"}),
            "uri": forms.URLInput(attrs={"placeholder": "https://"}),
            "email": forms.EmailInput(),
        }.get(prop.get("format"), forms.TextInput())
        if (prop.get("maxLength") or 0) > 200:
            widget = forms.Textarea(attrs={"rows": 3})
        return forms.CharField(initial=default if has_default else None, widget=widget, strip=False, **common)
    if kind == "integer":
        return forms.IntegerField(
            initial=default if has_default else None,
            min_value=prop.get("minimum"),
            max_value=prop.get("maximum"),
            **common,
        )
    if kind == "number":
        field = forms.FloatField(
            initial=default if has_default else None,
            min_value=prop.get("minimum"),
            max_value=prop.get("maximum"),
            **common,
        )
        field.widget.attrs["step"] = "any"
        return field
    if kind == "boolean":
        if required or has_default:
            return forms.BooleanField(**{**common, "required": False}, initial=bool(default))
        return forms.NullBooleanField(
            widget=forms.Select(choices=[("unknown", "— (leave out)"), ("true", "Yes"), ("false", "No")]),
            **{**common, "required": False},
        )
    items = prop.get("items") if isinstance(prop.get("items"), dict) else {}
    if kind == "array" and isinstance(items.get("enum"), list):
        choices = [(_choice_value(v), _choice_value(v)) for v in items["enum"]]
        initial = [_choice_value(v) for v in default] if isinstance(default, list) else None
        return forms.MultipleChoiceField(
            choices=choices, widget=forms.CheckboxSelectMultiple, initial=initial, **common
        )
    if (
        kind == "array"
        and items.get("type") in ("string", "integer", "number")
        and not items.get("properties")
    ):
        field = LinesField(item_type=items["type"], initial="\n".join(map(str, default or [])), **common)
        field.help_text = (help_text + " " if help_text else "") + "One item per line."
        return field
    initial = json.dumps(default, indent=2) if has_default else None
    field = JSONText(initial=initial, **common)
    field.help_text = (help_text + " " if help_text else "") + f"JSON ({schemas.type_label(prop)})."
    return field


class InvokeForm(forms.Form):
    """Fields generated from ``input_schema``; ``payload()`` gives the validated payload."""

    async_timeout_seconds = forms.IntegerField(
        label="Time limit (seconds)",
        required=False,
        min_value=ASYNC_TIMEOUT_MIN,
        max_value=ASYNC_TIMEOUT_MAX,
        help_text=f"Optional: fail the run after this long ({ASYNC_TIMEOUT_MIN} to {ASYNC_TIMEOUT_MAX} s).",
    )

    def __init__(self, input_schema: Any, *args, **kwargs):
        kwargs.setdefault("prefix", PREFIX)
        super().__init__(*args, **kwargs)
        self.schema = input_schema if isinstance(input_schema, dict) else {}
        self.raw = not renderable(self.schema)
        self.property_names: list[str] = []
        if self.raw:
            example = "{}" if self.schema.get("type", "object") == "object" else ""
            self.fields["payload"] = JSONText(
                label="Payload (JSON)",
                required=False,
                initial=example,
                help_text="This action's input schema has no simple form; write the payload as JSON.",
            )
            self.fields["payload"].widget.attrs["rows"] = 10
        else:
            required = set(self.schema.get("required") or [])
            for name, prop in self.schema["properties"].items():
                self.fields[f"p__{name}"] = _field(
                    name, prop if isinstance(prop, dict) else {}, name in required
                )
                self.property_names.append(name)
        # The time limit goes last, after the action's own fields.
        self.fields["async_timeout_seconds"] = self.fields.pop("async_timeout_seconds")

    def input_fields(self):
        return [self[f"p__{name}"] for name in self.property_names] if not self.raw else [self["payload"]]

    def clean(self):
        cleaned = super().clean()
        if self.errors:
            return cleaned
        payload = self._payload(cleaned)
        problems = schemas.errors(self.schema, payload)
        for problem in problems:
            target = self._field_for(problem)
            self.add_error(target, problem)
        cleaned["payload_value"] = payload
        return cleaned

    def _payload(self, cleaned: dict) -> Any:
        if self.raw:
            value = cleaned.get("payload")
            return {} if value is JSONText.EMPTY else value
        payload: dict[str, Any] = {}
        for name in self.property_names:
            value = cleaned.get(f"p__{name}")
            field = self.fields[f"p__{name}"]
            if value is JSONText.EMPTY or value is None or value == "" or value == []:
                continue  # left out: the action applies its own default
            if isinstance(field, forms.ChoiceField):
                value = self._enum_value(name, value)
            payload[name] = value
        return payload

    def _enum_value(self, name: str, value: Any) -> Any:
        """Map a chosen option back to the schema's own value (numbers stay numbers)."""
        prop = self.schema["properties"][name]
        options = prop.get("enum") or (prop.get("items") or {}).get("enum") or []
        lookup = {_choice_value(v): v for v in options}
        if isinstance(value, list):
            return [lookup.get(v, v) for v in value]
        return lookup.get(value, value)

    def _field_for(self, problem: str) -> str | None:
        if self.raw:
            return "payload"
        for name in self.property_names:
            if problem.startswith((f"{name} ", f"{name}.", f"{name}[")):
                return f"p__{name}"
        return None

    def payload(self) -> Any:
        return self.cleaned_data["payload_value"]
