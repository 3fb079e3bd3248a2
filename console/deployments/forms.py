from __future__ import annotations

import re
import zipfile

from django import forms

from console.service.contract import BUILDING_DEPLOYMENT_STATUSES, DEPLOYMENT_REGIONS, DEPLOYMENT_STATUSES
from console.web.forms import WriteOnlyTextarea  # environment variable values are write-only
from console.web.status import describe

MAX_UPLOAD_BYTES = 200 * 1024 * 1024
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
VERSION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$")


class FilterForm(forms.Form):
    app_name = forms.CharField(label="App", required=False, max_length=200)
    app_version = forms.CharField(label="Version", required=False, max_length=100)
    query = forms.CharField(label="Search", required=False, max_length=200)
    # The service has no status filter: the view applies this one to the page it shows.
    status = forms.ChoiceField(
        label="Status",
        required=False,
        choices=[
            ("", "Any"),
            ("in_progress", "In progress (queued or building)"),
            *(
                (s, describe("deployment", s)[0])
                for s in DEPLOYMENT_STATUSES
                if s not in BUILDING_DEPLOYMENT_STATUSES
            ),
        ],
    )

    def clean(self):
        cleaned = super().clean()
        if cleaned.get("app_version") and not cleaned.get("app_name"):
            self.add_error("app_version", "Filter by app as well: a version belongs to an app.")
        return cleaned

    def filters(self) -> dict[str, str]:
        """What the service filters by (``status`` is the view's)."""
        return {k: v.strip() for k, v in self.cleaned_data.items() if v and v.strip() and k != "status"}

    def keeps(self, deployment) -> bool:
        wanted = self.cleaned_data.get("status")
        if wanted == "in_progress":
            return deployment.status in BUILDING_DEPLOYMENT_STATUSES
        return not wanted or deployment.status == wanted


class DeploymentForm(forms.Form):
    file = forms.FileField(
        label="App source (.zip)", help_text="A zip of the app's folder, with the entrypoint file inside."
    )
    entrypoint_rel_path = forms.CharField(
        label="Entrypoint",
        max_length=500,
        initial="main.py",
        help_text="The file inside the zip that defines the app, e.g. main.py or src/index.ts.",
    )
    version = forms.CharField(
        label="Version", max_length=64, initial="latest", help_text="A label such as 1.2.0 or latest."
    )
    region = forms.ChoiceField(
        label="Region", choices=[(r, r) for r in DEPLOYMENT_REGIONS], initial=DEPLOYMENT_REGIONS[0]
    )
    env_vars = forms.CharField(
        label="Environment variables",
        required=False,
        widget=WriteOnlyTextarea(attrs={"rows": 4, "autocomplete": "off", "spellcheck": "false"}),
        help_text="One NAME=value per line. Values are write-only: never shown again, not even here.",
    )
    force = forms.BooleanField(
        label="Replace this version if it is already deployed", required=False, initial=False
    )

    def clean_file(self):
        upload = self.cleaned_data["file"]
        if upload.size > MAX_UPLOAD_BYTES:
            raise forms.ValidationError(f"The file is over {MAX_UPLOAD_BYTES // (1024 * 1024)} MiB.")
        if not upload.name.lower().endswith(".zip"):
            raise forms.ValidationError("Upload a .zip file.")
        upload.seek(0)
        ok = zipfile.is_zipfile(upload)
        upload.seek(0)
        if not ok:
            raise forms.ValidationError("This file is not a zip archive.")
        return upload

    def clean_entrypoint_rel_path(self) -> str:
        path = self.cleaned_data["entrypoint_rel_path"].strip().replace("\\", "/")
        if path.startswith("/") or ".." in path.split("/") or path.endswith("/"):
            raise forms.ValidationError("A file path relative to the zip's root, e.g. main.py.")
        return path

    def clean_version(self) -> str:
        version = self.cleaned_data["version"].strip()
        if not VERSION.match(version):
            raise forms.ValidationError(
                "Letters, digits, dots, dashes, underscores or plus signs (up to 64), e.g. 1.2.0."
            )
        return version

    def clean_env_vars(self) -> dict[str, str]:
        found: dict[str, str] = {}
        problems = []
        for number, line in enumerate(self.cleaned_data["env_vars"].splitlines(), start=1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            name, sep, value = line.partition("=")
            name = name.strip()
            # Messages name the line and the variable, never the value.
            if not sep:
                problems.append(f"Line {number}: write NAME=value.")
            elif not ENV_NAME.match(name):
                problems.append(
                    f"Line {number}: “{name[:40]}” is not a valid name "
                    "(letters, digits and underscores, not starting with a digit)."
                )
            elif name in found:
                problems.append(f"Line {number}: {name} is given twice.")
            else:
                found[name] = value
        if problems:
            raise forms.ValidationError(
                [*problems, "Enter the variables again: values are never shown back."]
            )
        return found
