"""Forms of the processes, files and computer panes: everything is checked here before anything is sent."""

from __future__ import annotations

import re
import shlex
import zipfile
from urllib.parse import quote

from django import forms
from django.conf import settings
from django.core.validators import MaxValueValidator

from console.service import browser_computer
from console.service.contract import MOUSE_BUTTONS, PROCESS_SIGNALS

MAX_TEXT = 10_000
MAX_STDIN = 64 * 1024
MAX_PATH_BYTES = 4096
MAX_NAME_BYTES = 255
ROW_NUMBER = re.compile(r"[0-9]{1,4}")


def check_path(value: str, *, label: str = "The path") -> str:
    """An absolute path of the session, without ``..`` (the service refuses those too)."""
    value = (value or "").strip()
    if not value.startswith("/"):
        raise forms.ValidationError(f"{label} must be absolute, starting with /.")
    parts = [p for p in value.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise forms.ValidationError(f"{label} cannot contain “..”.")
    if "\x00" in value:
        raise forms.ValidationError(f"{label} contains a NUL character.")
    # Linux's limits (PATH_MAX, NAME_MAX): the service cannot hold longer ones, so they are never sent.
    if len(value.encode()) > MAX_PATH_BYTES:
        raise forms.ValidationError(f"{label} is too long: at most {MAX_PATH_BYTES} bytes.")
    if any(len(p.encode()) > MAX_NAME_BYTES for p in parts):
        raise forms.ValidationError(
            f"{label} has a name that is too long: each at most {MAX_NAME_BYTES} bytes."
        )
    return "/" + "/".join(parts)


def max_upload_bytes() -> int:
    return getattr(settings, "SESSION_UPLOAD_MAX_BYTES", 100 * 1024 * 1024)


class PathField(forms.CharField):
    def __init__(self, *, label_text: str = "The path", **kwargs):
        self.label_text = label_text
        kwargs.setdefault("max_length", MAX_PATH_BYTES)
        super().__init__(**kwargs)

    def clean(self, value):
        value = super().clean(value)
        return check_path(value, label=self.label_text) if value else value


# Processes -----------------------------------------------------------------------------------------


# An option kept as typed in a command's shape: ``-v``, ``--verbose``; anything else is a value, hidden.
OPTION = re.compile(r"-[A-Za-z0-9]|--[A-Za-z0-9][A-Za-z0-9_-]{0,40}")
MAX_SHAPE = 160


def command_shape(argv: list[str]) -> str:
    """The program and its arguments with every value hidden, as the console keeps it (the values may hold
    secrets): ``sh -c '…'`` is ``sh -c …``, ``--token=abc`` is ``--token=…``."""
    shown = [argv[0][:80]]
    for arg in argv[1:]:
        option, sep, _ = arg.partition("=")
        if OPTION.fullmatch(option):
            shown.append(f"{option}=…" if sep else option)
        else:
            shown.append("…")
    shape = " ".join(shown)
    return shape if len(shape) <= MAX_SHAPE else shape[: MAX_SHAPE - 1] + "…"


class CommandForm(forms.Form):
    label = forms.CharField(
        required=False,
        max_length=80,
        label="Name",
        help_text="To tell it apart in the list (every member sees it: no secrets).",
        widget=forms.TextInput(attrs={"placeholder": "e.g. download the report", "autocomplete": "off"}),
    )
    command = forms.CharField(
        max_length=4000,
        help_text="A program and its arguments, quoted as in a shell (no shell runs unless you name one, "
        "e.g. sh -c '…').",
        widget=forms.TextInput(attrs={"placeholder": "ls -la /home/kernel/Downloads", "autocomplete": "off"}),
    )
    cwd = PathField(
        required=False,
        label="Working directory",
        label_text="The working directory",
        help_text="Default: /home/kernel.",
        widget=forms.TextInput(attrs={"placeholder": "/home/kernel"}),
    )
    timeout_sec = forms.FloatField(
        required=False,
        min_value=0.1,
        max_value=3600,
        label="Timeout (seconds)",
        help_text="Optional: the process is killed after this long.",
    )
    allocate_tty = forms.BooleanField(
        required=False,
        label="Run in a terminal (TTY)",
        help_text="Spawn only: stdout and stderr arrive merged.",
    )

    def clean_command(self):
        try:
            argv = shlex.split(self.cleaned_data["command"])
        except ValueError as exc:
            raise forms.ValidationError(f"The command line cannot be read: {exc}.") from None
        if not argv:
            raise forms.ValidationError("Name a program to run.")
        return argv

    @property
    def argv(self) -> list[str]:
        return self.cleaned_data["command"]

    def audit_detail(self, session_id: str) -> str:
        """What the audit log keeps of a command: program, argument count, shape and name, never a value.
        Space-separated ``key=value`` pairs (``processes._spawned`` reads them back), free text quoted."""
        argv = self.argv
        detail = f"session={session_id} program={quote(argv[0][:80], safe='')} args={len(argv) - 1}"
        detail += f" shape={quote(command_shape(argv), safe='')}"
        label = " ".join((self.cleaned_data.get("label") or "").split())
        return detail + (f" name={quote(label, safe='')}" if label else "")

    def call(self) -> dict:
        """The command as ``exec_command`` and ``spawn`` take it after the session id."""
        data = self.cleaned_data
        return {
            "command": self.argv[0],
            "args": self.argv[1:],
            "cwd": data.get("cwd") or None,
            "timeout_sec": data.get("timeout_sec"),
        }


class StdinForm(forms.Form):
    text = forms.CharField(
        max_length=MAX_STDIN,
        strip=False,
        label="Send to standard input",
        widget=forms.TextInput(attrs={"autocomplete": "off", "placeholder": "input for the process"}),
    )
    newline = forms.BooleanField(required=False, initial=True, label="Append a newline")

    def data_bytes(self) -> bytes:
        text = self.cleaned_data["text"]
        return (text + ("\n" if self.cleaned_data.get("newline") else "")).encode()


class KillForm(forms.Form):
    signal = forms.ChoiceField(
        choices=[
            ("TERM", "TERM — ask it to stop"),
            ("INT", "INT — as Ctrl+C"),
            ("HUP", "HUP — hang up"),
            ("KILL", "KILL — stop it at once"),
        ],
        initial="TERM",
    )

    def clean_signal(self):
        value = self.cleaned_data["signal"]
        if value not in PROCESS_SIGNALS:
            raise forms.ValidationError("Choose TERM, INT, HUP or KILL.")
        return value


# Files ---------------------------------------------------------------------------------------------


class DirectoryForm(forms.Form):
    path = PathField(label="New directory", label_text="The directory")

    # Its ids differ from the other path form's on the files pane (each id once per page).
    def __init__(self, *args, **kwargs):
        super().__init__(*args, auto_id="mkdir_%s", **kwargs)


class MoveForm(forms.Form):
    src_path = PathField(widget=forms.HiddenInput, label_text="The source")
    dest_path = PathField(label="Move or rename to", label_text="The destination")

    def clean(self):
        data = super().clean()
        src, dest = data.get("src_path"), data.get("dest_path")
        if src and dest:
            if src == "/":
                raise forms.ValidationError("The root directory cannot be moved.")
            if dest == src:
                self.add_error("dest_path", "This is where it already is.")
            elif dest.startswith(src + "/"):
                self.add_error("dest_path", "A directory cannot move into itself.")
        return data


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    def __init__(self, *args, **kwargs):
        kwargs.setdefault("widget", MultipleFileInput())
        super().__init__(*args, **kwargs)

    def clean(self, data, initial=None):
        single = super().clean
        if isinstance(data, list | tuple):
            return [single(item, initial) for item in data]
        return [single(data, initial)] if data else single(data, initial)


def _size_check(upload) -> None:
    limit = max_upload_bytes()
    if upload.size > limit:
        mib = 1024 * 1024
        raise forms.ValidationError(
            f"{upload.name} is {upload.size / mib:.1f} MiB; at most {limit // mib} MiB can be uploaded."
        )


class UploadForm(forms.Form):
    files = MultipleFileField(label="Files", help_text="They keep their names.")
    directory = PathField(label="Into directory", label_text="The directory")

    def clean_files(self):
        uploads = self.cleaned_data["files"]
        names = set()
        for upload in uploads:
            _size_check(upload)
            name = upload.name.replace("\\", "/").rsplit("/", 1)[-1]
            if name in ("", ".", ".."):
                raise forms.ValidationError(f"{upload.name!r} is not a usable file name.")
            if name in names:
                raise forms.ValidationError(f"Two files are named {name}.")
            names.add(name)
        return uploads

    def destinations(self) -> list[tuple[str, str, object]]:
        directory = self.cleaned_data["directory"].rstrip("/")
        items = []
        for upload in self.cleaned_data["files"]:
            name = upload.name.replace("\\", "/").rsplit("/", 1)[-1]
            items.append((f"{directory}/{name}", name, upload.file))
        return items


class ZipUploadForm(forms.Form):
    zip_file = forms.FileField(label="Zip archive", help_text="Extracted into the directory below.")
    dest_path = PathField(label="Extract into", label_text="The directory")

    def clean_zip_file(self):
        upload = self.cleaned_data["zip_file"]
        _size_check(upload)
        upload.file.seek(0)
        if not zipfile.is_zipfile(upload.file):
            raise forms.ValidationError("This is not a zip archive.")
        upload.file.seek(0)
        try:
            with zipfile.ZipFile(upload.file) as bundle:
                for name in bundle.namelist():
                    parts = name.replace("\\", "/").split("/")
                    if name.startswith(("/", "\\")) or ".." in parts:
                        raise forms.ValidationError(
                            f"The archive holds an entry that would land outside the directory: {name}"
                        )
        except zipfile.BadZipFile as exc:
            raise forms.ValidationError(f"The archive cannot be read: {exc}") from None
        upload.file.seek(0)
        return upload


class WatchForm(forms.Form):
    path = PathField(label="Watch directory", label_text="The directory")
    recursive = forms.BooleanField(required=False, initial=True, label="Include subdirectories")

    # Its ids differ from the other path form's on the files pane (each id once per page).
    def __init__(self, *args, **kwargs):
        super().__init__(*args, auto_id="watch_%s", **kwargs)


# Computer ------------------------------------------------------------------------------------------


class ViewportForm(forms.Form):
    """A form whose coordinates must fall inside the session's viewport."""

    def __init__(self, *args, viewport: tuple[int, int] = (1920, 1080), **kwargs):
        super().__init__(*args, **kwargs)
        self.width, self.height = viewport
        for name, high in (("x", self.width - 1), ("y", self.height - 1)):
            if name in self.fields:
                self.fields[name].max_value = high
                self.fields[name].validators.append(MaxValueValidator(high))
                self.fields[name].widget.attrs.update({"min": 0, "max": high})
                self.fields[name].help_text = f"0 to {high}"


def coordinate(label: str) -> forms.IntegerField:
    return forms.IntegerField(label=label, min_value=0)


class MoveMouseForm(ViewportForm):
    x = coordinate("x")
    y = coordinate("y")

    def call(self, svc, session_id):
        return browser_computer.move_mouse(svc, session_id, self.cleaned_data["x"], self.cleaned_data["y"])


class ClickForm(ViewportForm):
    x = coordinate("x")
    y = coordinate("y")
    button = forms.ChoiceField(choices=[(b, b) for b in MOUSE_BUTTONS], initial="left")
    num_clicks = forms.IntegerField(label="Clicks", min_value=1, max_value=3, initial=1)

    def call(self, svc, session_id):
        data = self.cleaned_data
        return browser_computer.click_mouse(
            svc, session_id, data["x"], data["y"], button=data["button"], num_clicks=data["num_clicks"]
        )


class TypeForm(ViewportForm):
    text = forms.CharField(
        max_length=MAX_TEXT,
        strip=False,
        label="Text to type",
        widget=forms.TextInput(attrs={"autocomplete": "off"}),
    )

    def call(self, svc, session_id):
        return browser_computer.type_text(svc, session_id, self.cleaned_data["text"])


def parse_keys(value: str) -> list[str]:
    keys = value.split()
    if not keys:
        raise forms.ValidationError("Name at least one key, e.g. Return or Ctrl+t.")
    for key in keys:
        if len(key) > 64:
            raise forms.ValidationError(f"{key[:20]}… is not a key name.")
    return keys


class KeysForm(ViewportForm):
    keys = forms.CharField(
        max_length=500,
        label="Keys",
        help_text="xdotool names separated by spaces, e.g. Return, Tab, Ctrl+t, Escape.",
        widget=forms.TextInput(attrs={"placeholder": "Ctrl+l Return", "autocomplete": "off"}),
    )

    def clean_keys(self):
        return parse_keys(self.cleaned_data["keys"])

    def call(self, svc, session_id):
        return browser_computer.press_key(svc, session_id, self.cleaned_data["keys"])


class ScrollForm(ViewportForm):
    x = coordinate("x")
    y = coordinate("y")
    delta_x = forms.IntegerField(
        label="Right (wheel steps)", min_value=-100, max_value=100, initial=0, required=False
    )
    delta_y = forms.IntegerField(
        label="Down (wheel steps)", min_value=-100, max_value=100, initial=3, required=False
    )

    def clean(self):
        data = super().clean()
        if not data.get("delta_x") and not data.get("delta_y"):
            raise forms.ValidationError(
                "Give a number of wheel steps to scroll (negative scrolls up or left)."
            )
        return data

    def call(self, svc, session_id):
        data = self.cleaned_data
        return browser_computer.scroll(
            svc,
            session_id,
            data["x"],
            data["y"],
            delta_x=data.get("delta_x") or 0,
            delta_y=data.get("delta_y") or 0,
        )


ACTION_FORMS = {
    "move": (MoveMouseForm, "Move the mouse"),
    "click": (ClickForm, "Click"),
    "type": (TypeForm, "Type text"),
    "keys": (KeysForm, "Press keys"),
    "scroll": (ScrollForm, "Scroll"),
}

# The batch builder: rows of (type, fields). Each row's fields arrive as action-<n>-<field>.
BATCH_TYPES = [
    ("", "—"),
    ("move_mouse", "Move mouse"),
    ("click_mouse", "Click"),
    ("type_text", "Type text"),
    ("press_key", "Press keys"),
    ("scroll", "Scroll"),
    ("sleep", "Wait"),
]
BATCH_FIELDS = ("type", "x", "y", "button", "text", "keys", "delta_y", "duration_ms")
MAX_BATCH_ROWS = 20


class BatchRow:
    """One row of the batch builder, as typed, with its own errors."""

    def __init__(self, index: int, values: dict[str, str]):
        self.index = index
        self.values = values
        self.errors: list[str] = []

    @property
    def type(self) -> str:
        return self.values.get("type", "")

    @property
    def empty(self) -> bool:
        return not self.type


def batch_rows(data, count: int | None = None) -> list[BatchRow]:
    """Rows from POST data (``action-<n>-<field>``), or ``count`` empty rows."""
    if data is None:
        # Every field present: the template reads row.values.keys, which must not become dict.keys.
        return [BatchRow(i, {**dict.fromkeys(BATCH_FIELDS, ""), "button": "left"}) for i in range(count or 3)]
    indexes = set()
    for key in data:
        parts = key.split("-")
        # ASCII digits, a few: str.isdigit says yes to "²" and to 5000 digits, which int() refuses (a 500).
        if len(parts) == 3 and parts[0] == "action" and ROW_NUMBER.fullmatch(parts[1]):
            indexes.add(int(parts[1]))
    rows = []
    # Every row, even past the limit: the view refuses an oversized batch rather than cut it silently.
    for position, index in enumerate(sorted(indexes)):
        values = {name: (data.get(f"action-{index}-{name}") or "").strip() for name in BATCH_FIELDS}
        rows.append(BatchRow(position, values))
    return rows


def build_batch(rows: list[BatchRow], viewport: tuple[int, int]) -> tuple[list[dict], list[BatchRow]] | None:
    """The service's actions for the non-empty rows and the row of each action, or None when a row has
    errors (set on the row)."""
    width, height = viewport
    actions = []
    used: list[BatchRow] = []
    valid = True

    def number(row, name, low, high, required=True):
        raw = row.values.get(name, "")
        if raw == "":
            if required:
                row.errors.append(f"{name} is required.")
            return None
        try:
            value = int(raw)
        except ValueError:
            row.errors.append(f"{name} must be a whole number.")
            return None
        if not low <= value <= high:
            row.errors.append(f"{name} must be between {low} and {high}.")
            return None
        return value

    for row in rows:
        kind = row.type
        if not kind:
            continue
        fields: dict = {}
        if kind in ("move_mouse", "click_mouse", "scroll"):
            fields["x"] = number(row, "x", 0, width - 1)
            fields["y"] = number(row, "y", 0, height - 1)
        if kind == "click_mouse":
            button = row.values.get("button") or "left"
            if button not in MOUSE_BUTTONS:
                row.errors.append("Choose a mouse button.")
            fields["button"] = button
        elif kind == "type_text":
            if not row.values.get("text"):
                row.errors.append("Give the text to type.")
            fields["text"] = row.values.get("text", "")
        elif kind == "press_key":
            try:
                fields["keys"] = parse_keys(row.values.get("keys", ""))
            except forms.ValidationError as exc:
                row.errors.extend(exc.messages)
        elif kind == "scroll":
            fields["delta_y"] = number(row, "delta_y", -100, 100)
        elif kind == "sleep":
            fields["duration_ms"] = number(row, "duration_ms", 0, 10_000)
        elif kind not in dict(BATCH_TYPES):
            row.errors.append("Choose an action.")
        if row.errors:
            valid = False
            continue
        actions.append(browser_computer.action(kind, **fields))
        used.append(row)
    if valid and not actions:
        if rows:
            rows[0].errors.append("Choose at least one action.")
        return None
    return (actions, used) if valid else None
