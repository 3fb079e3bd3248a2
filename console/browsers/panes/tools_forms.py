"""Forms of the tools pane: checked here, so bad input never reaches the service."""

from __future__ import annotations

import re

from django import forms

from console.service.contract import CURL_METHODS, SUPERVISOR_PROCESSES
from console.web.forms import header_lines, http_url

EXTENSION_NAME = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
MAX_EXTENSION_BYTES = 100 * 1024 * 1024


class CurlForm(forms.Form):
    method = forms.ChoiceField(choices=[(m, m) for m in CURL_METHODS], initial="GET")
    url = forms.CharField(
        max_length=4096, label="URL", widget=forms.URLInput(attrs={"placeholder": "https://"})
    )
    headers = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2, "placeholder": "Accept: application/json"}),
        help_text="One Name: value per line. Not recorded in the audit log.",
    )
    body = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}))
    response_encoding = forms.ChoiceField(
        choices=[("utf8", "Text"), ("base64", "Binary (base64)")], initial="utf8", label="Response"
    )

    def clean_url(self) -> str:
        value = self.cleaned_data["url"].strip()
        http_url(value)
        return value

    def clean_headers(self) -> dict[str, str]:
        return header_lines(self.cleaned_data["headers"])


class ExtensionForm(forms.Form):
    name = forms.CharField(
        max_length=64, help_text="Its folder: /home/kernel/extensions/<name>. Letters, digits, . _ -"
    )
    zip_file = forms.FileField(
        label="Zip of the unpacked extension", help_text="With manifest.json; Chromium restarts."
    )

    def clean_name(self) -> str:
        value = self.cleaned_data["name"].strip()
        if not EXTENSION_NAME.match(value):
            raise forms.ValidationError("Use letters, digits, dots, underscores and hyphens only.")
        return value

    def clean_zip_file(self):
        upload = self.cleaned_data["zip_file"]
        if upload.size > MAX_EXTENSION_BYTES:
            raise forms.ValidationError("An extension is at most 100 MiB.")
        head = upload.read(4)
        upload.seek(0)
        if head != b"PK\x03\x04":
            raise forms.ValidationError("That is not a zip archive.")
        return upload


class LogsForm(forms.Form):
    source = forms.ChoiceField(choices=[("supervisor", "A supervised process"), ("path", "A file")])
    supervisor_process = forms.ChoiceField(
        required=False, choices=[(p, p) for p in SUPERVISOR_PROCESSES], initial="chromium", label="Process"
    )
    path = forms.CharField(
        required=False, max_length=1024, widget=forms.TextInput(attrs={"placeholder": "/var/log/app.log"})
    )

    def clean(self):
        cleaned = super().clean()
        if cleaned.get("source") == "path":
            path = (cleaned.get("path") or "").strip()
            if not path.startswith("/") or ".." in path.split("/"):
                self.add_error("path", "An absolute path in the session, without ..")
            cleaned["path"] = path
        return cleaned

    def params(self) -> dict[str, str]:
        data = self.cleaned_data
        if data["source"] == "path":
            return {"source": "path", "path": data["path"], "follow": "true"}
        return {
            "source": "supervisor",
            "supervisor_process": data["supervisor_process"] or "chromium",
            "follow": "true",
        }
