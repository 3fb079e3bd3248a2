from __future__ import annotations

import re
from datetime import datetime

from django import forms

from console.service.contract import INVOCATION_STATUSES
from console.web.status import describe

DURATION = re.compile(r"^\d+[smhd]$")


class FilterForm(forms.Form):
    """The list's filters; checked here so the service never gets a ``since`` it would refuse."""

    app_name = forms.CharField(label="App", required=False, max_length=200)
    action_name = forms.CharField(label="Action", required=False, max_length=200)
    version = forms.CharField(label="Version", required=False, max_length=100)
    status = forms.ChoiceField(
        label="Status",
        required=False,
        choices=[("", "Any"), *((s, describe("invocation", s)[0]) for s in INVOCATION_STATUSES)],
    )
    since = forms.CharField(
        label="Since",
        required=False,
        max_length=40,
        help_text="A duration such as 30m, 2h or 7d, or a time such as 2025-01-31T12:00:00Z.",
        widget=forms.TextInput(attrs={"placeholder": "e.g. 24h"}),
    )

    def clean_since(self) -> str:
        value = self.cleaned_data["since"].strip()
        if not value or DURATION.match(value):
            return value
        try:
            moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise forms.ValidationError(
                "Use a duration (30m, 2h, 7d) or a time (2025-01-31T12:00:00Z)."
            ) from None
        if moment.tzinfo is None:
            raise forms.ValidationError("Add a time zone, e.g. a trailing Z for UTC.")
        return value

    def filters(self) -> dict[str, str]:
        return {k: v for k, v in self.cleaned_data.items() if v}
