"""Forms of the profiles pages: validated here, so bad input never reaches the service."""

from __future__ import annotations

import re

from django import forms

# Profile names: 1 to 255 of letters, digits, dot, underscore, hyphen (notes §2).
NAME = re.compile(r"^[A-Za-z0-9._-]+$")


class ProfileForm(forms.Form):
    name = forms.CharField(
        max_length=255,
        label="Profile name",
        help_text="Letters, digits, dots, underscores and hyphens; unique in the project.",
    )

    def __init__(self, *args, required: bool = True, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["name"].required = required
        if not required:
            self.fields["name"].help_text += " Leave empty for an unnamed profile."

    def clean_name(self):
        value = self.cleaned_data["name"].strip()
        if value and not NAME.match(value):
            raise forms.ValidationError(
                "Use only letters, digits, dots, underscores and hyphens (no spaces)."
            )
        return value
