"""Forms of the API keys pages: checked here, so bad input never reaches the service."""

from __future__ import annotations

from django import forms

from console.service.api_keys import MAX_DAYS
from console.web.forms import NameField

EXPIRY_CHOICES = [("30", "30 days"), ("90", "90 days"), ("365", "1 year"), ("", "Never")]


class CreateForm(forms.Form):
    name = NameField(help_text="What uses this key, e.g. ci-pipeline.")
    days_to_expire = forms.TypedChoiceField(
        choices=EXPIRY_CHOICES, coerce=int, empty_value=None, required=False, initial="90", label="Expires in"
    )
    project_id = forms.ChoiceField(
        required=False, label="Scope", help_text="Org-wide keys reach every project."
    )

    def __init__(self, *args, projects=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["project_id"].choices = [("", "Org-wide (every project)")] + [
            (p.id, f"Project {p.name or p.id}") for p in projects if not p.archived
        ]


class RenameForm(forms.Form):
    name = NameField()


class RotateForm(forms.Form):
    expire_in_days = forms.IntegerField(
        min_value=0,
        max_value=MAX_DAYS,
        initial=7,
        label="Old key stays valid for (days)",
        help_text="0 stops the old key at once; callers still using it fail from then on.",
    )
