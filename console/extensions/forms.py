"""The upload form: what the console can check about a zipped extension before sending it.

The archive is inspected where Django put it (a temporary file for anything over
FILE_UPLOAD_MAX_MEMORY_SIZE): ``zipfile`` reads only the central directory and manifest.json, never
the whole file into memory.
"""

from __future__ import annotations

import json
import re
import zipfile

from django import forms
from django.conf import settings
from django.template.defaultfilters import filesizeformat

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._ -]*$")
_DRIVE = re.compile(r"^[A-Za-z]:")
MANIFEST_MAX_BYTES = 1024 * 1024


def archive_problem(fileobj) -> str | None:
    """Why a file is not a usable extension archive, or None (the file position is restored to 0)."""
    try:
        if not zipfile.is_zipfile(fileobj):
            return "This file is not a zip archive."
        fileobj.seek(0)
        with zipfile.ZipFile(fileobj) as archive:
            infos = archive.infolist()
            names = [info.filename for info in infos]
            if not names:
                return "This zip archive is empty."
            for name in names:
                path = name.replace("\\", "/")
                if path.startswith("/") or _DRIVE.match(path) or ".." in path.split("/"):
                    return f"The archive has an unsafe entry “{name}” (an absolute path or “..”)."
            manifest = manifest_path(names)
            if manifest is None:
                return (
                    "manifest.json is missing: zip the extension's folder so that manifest.json is at "
                    "the root of the archive or inside its single top folder."
                )
            if archive.getinfo(manifest).file_size > MANIFEST_MAX_BYTES:
                return "manifest.json is too large to be an extension manifest."
            try:
                data = json.loads(archive.read(manifest).decode("utf-8-sig"))
            except (ValueError, UnicodeDecodeError, RecursionError):
                return "manifest.json is not valid JSON."
            if not isinstance(data, dict):
                return "manifest.json must hold a JSON object."
    except (zipfile.BadZipFile, OSError, EOFError):
        return "This zip archive is damaged and cannot be read."
    finally:
        fileobj.seek(0)
    return None


def manifest_path(names: list[str]) -> str | None:
    if "manifest.json" in names:
        return "manifest.json"
    tops = {name.split("/", 1)[0] for name in names}
    if len(tops) == 1 and all("/" in name for name in names):
        candidate = f"{next(iter(tops))}/manifest.json"
        if candidate in names:
            return candidate
    return None


class UploadForm(forms.Form):
    file = forms.FileField(
        label="Extension archive (.zip)",
        widget=forms.ClearableFileInput(attrs={"accept": ".zip,application/zip"}),
        help_text="A zip of the unpacked extension: manifest.json at its root or in its single top folder.",
    )
    name = forms.CharField(
        required=False,
        max_length=255,
        help_text="Optional, unique in the project: sessions and pools can refer to the extension by it.",
    )

    @staticmethod
    def max_bytes() -> int:
        return settings.EXTENSION_MAX_UPLOAD_BYTES

    def clean_file(self):
        upload = self.cleaned_data["file"]
        if upload.size > self.max_bytes():
            size, limit = filesizeformat(upload.size), filesizeformat(self.max_bytes())
            raise forms.ValidationError(f"This file is {size}; the limit is {limit}.")
        problem = archive_problem(upload.file)
        if problem:
            raise forms.ValidationError(problem)
        return upload

    def clean_name(self) -> str:
        value = self.cleaned_data["name"].strip()
        if value and not _NAME.match(value):
            raise forms.ValidationError(
                "Use letters, digits, spaces, dots, dashes and underscores, starting with a letter or digit."
            )
        return value
