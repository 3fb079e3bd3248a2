"""Forms of the telemetry destinations pages: checked here, so bad input never reaches the service.

Header values are secrets (ingest keys): their field is write-only and never rendered back, not even
after a validation error.
"""

from __future__ import annotations

import re

from django import forms

from console.web.forms import WriteOnlyTextarea, header_lines, public_url

HEADERS_MAX_BYTES = 8192


def _public_endpoint(value: str) -> str:
    value = value.strip()
    parts = public_url(value, "the service only exports to public endpoints")
    if parts.query or parts.fragment:
        raise forms.ValidationError("Leave out the query string.")
    if re.search(r"/v1(/|$)", parts.path):
        raise forms.ValidationError("Give the base URL: the service adds /v1/traces, /v1/logs, …")
    return value.rstrip("/")


def _headers(text: str) -> dict[str, str]:
    headers = header_lines(text, " (letters, digits and hyphens)")
    if sum(len(k) + len(v) for k, v in headers.items()) > HEADERS_MAX_BYTES:
        raise forms.ValidationError(f"Headers are limited to {HEADERS_MAX_BYTES} bytes in total.")
    return headers


class DestinationForm(forms.Form):
    name = forms.CharField(max_length=255, help_text="Unique in the project; sessions pick it by name or id.")
    endpoint = forms.CharField(
        max_length=2048,
        widget=forms.URLInput(attrs={"placeholder": "https://otel.example.com:4318"}),
        help_text="The base OTLP/HTTP URL, without /v1/….",
    )
    description = forms.CharField(max_length=500, required=False)
    headers = forms.CharField(
        required=False,
        label="Headers",
        widget=WriteOnlyTextarea(
            attrs={"rows": 3, "placeholder": "x-honeycomb-team: …", "autocomplete": "off"}
        ),
        help_text="One Name: value per line. Values are stored by the service and never shown again.",
    )

    def clean_name(self) -> str:
        value = self.cleaned_data["name"].strip()
        if re.match(r"^otlp_[a-z0-9]+$", value):
            raise forms.ValidationError("A name must not look like an id.")
        return value

    def clean_endpoint(self) -> str:
        return _public_endpoint(self.cleaned_data["endpoint"])

    def clean_headers(self) -> dict[str, str]:
        return _headers(self.cleaned_data["headers"])


class EditForm(DestinationForm):
    remove_headers = forms.MultipleChoiceField(
        required=False, widget=forms.CheckboxSelectMultiple, label="Remove headers"
    )

    def __init__(self, *args, header_names=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["headers"].label = "Set headers"
        self.fields[
            "headers"
        ].help_text = (
            "One Name: value per line: adds the header or replaces its value. Headers not listed keep theirs."
        )
        self.fields["remove_headers"].choices = [(name, name) for name in header_names]
        if not header_names:
            del self.fields["remove_headers"]
