"""The sample app (console/apps/sample/: an entrypoint and its actions' schemas) as the zip a deployment
uploads: what the Apps page's "Deploy the sample" sends, so that trying Apps needs no reading of code."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

FOLDER = Path(__file__).resolve().parent / "sample"
FILES = ("main.py", "actions.json")
ENTRYPOINT = "main.py"
NAME = "sample-greeter"
VERSION = "1.0.0"


def archive() -> bytes:
    """The sample's files in a zip, read from the package each time (a few kilobytes)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zipped:
        for name in FILES:
            zipped.writestr(name, (FOLDER / name).read_bytes())
    return buffer.getvalue()
