"""Forms of the credential vault: validated here, so bad input never reaches the service.

Values and the TOTP secret are write-only. They arrive as password inputs, are checked, sent once and
then dropped: a form re-rendered after an error shows the value *names* again but never a value or the
secret (the widgets never render what was typed), and no error message quotes one.

Key/value rows are parallel lists: ``new_key``/``new_value`` for values to add, and on the edit form
``existing_key``/``existing_value`` (blank = keep) plus ``remove_key`` checkboxes for stored ones.
"""

from __future__ import annotations

import re
from itertools import zip_longest
from urllib.parse import urlsplit

from django import forms

from console.service.credentials import normalize_totp_secret
from console.web.forms import path_name

KEY_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
DOMAIN_PATTERN = re.compile(
    r"^(?=.{1,253}$)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$"
)
SSO_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,63}$")
SSO_PROVIDERS = ("google", "microsoft", "okta", "github", "apple")
MIN_ROWS_CREATE = 3
NEW_ROWS_EDIT = 2
SECRET_FIELDS = ("new_value", "existing_value", "totp_secret")
# Service field names → form fields, for the service's own 400 details.
SERVICE_FIELDS = {"values": "values", "remove_value_keys": "values"}


def _domain(value: str) -> str:
    value = value.strip().lower()
    if "://" in value:  # a pasted login URL: keep its host
        value = urlsplit(value).hostname or ""
    value = value.rstrip(".")
    if not DOMAIN_PATTERN.match(value):
        raise forms.ValidationError(
            "Give the bare host name the credential logs in to, such as accounts.example.com."
        )
    return value


def _key_error(key: str) -> str | None:
    if not KEY_PATTERN.match(key):
        return (
            f"“{key[:64]}” is not a valid value name: use 1 to 64 letters, digits, “_”, “.” or “-”, "
            "starting with a letter or digit."
        )
    return None


def _lists(data, *names: str) -> list[tuple[str, ...]]:
    if data is None:
        return []
    return list(zip_longest(*(data.getlist(name) for name in names), fillvalue=""))


class SecretInput(forms.PasswordInput):
    """A password input that never renders a value and asks browsers not to autofill it."""

    def __init__(self, attrs=None):
        super().__init__(attrs={"autocomplete": "new-password", **(attrs or {})}, render_value=False)


class CredentialFields(forms.Form):
    """What the create and edit forms share: the name, the SSO provider and the values' error slot."""

    name = forms.CharField(
        max_length=255,
        label="Name",
        help_text="Unique in the project, e.g. github-ci.",
        error_messages={"required": "A credential needs a name."},
    )
    sso_provider = forms.CharField(
        required=False,
        max_length=64,
        label="SSO provider",
        help_text="When the site is entered through single sign-on, e.g. google. Leave blank otherwise.",
        widget=forms.TextInput(attrs={"list": "sso-providers", "autocomplete": "off"}),
    )
    # Never rendered as an input: it carries the errors of the key/value rows.
    values = forms.CharField(required=False, widget=forms.HiddenInput)

    def clean_name(self):
        return path_name(self.cleaned_data["name"], "credential")

    def clean_sso_provider(self):
        value = self.cleaned_data["sso_provider"].strip().lower()
        if value and not SSO_PATTERN.match(value):
            raise forms.ValidationError("Use the provider's short name, such as google, microsoft or okta.")
        return value

    def _new_rows(self) -> tuple[dict[str, str], list[str]]:
        """The rows to add: (values by key, errors). Blank rows are skipped."""
        values: dict[str, str] = {}
        errors: list[str] = []
        for number, (key, value) in enumerate(_lists(self.data, "new_key", "new_value"), start=1):
            key = key.strip()
            if not key and not value:
                continue
            if not key:
                errors.append(f"Row {number} has a value but no name.")
            elif not value:
                errors.append(f"Enter a value for “{key}”, or clear its name.")
            elif error := _key_error(key):
                errors.append(error)
            elif key in values:
                errors.append(f"“{key}” is given twice.")
            else:
                values[key] = value
        return values, errors

    def new_keys(self) -> list[str]:
        """The names typed in the add rows, to show again after an error (never the values)."""
        return [key.strip() for key, _ in _lists(self.data, "new_key", "new_value")]


class CredentialForm(CredentialFields):
    domain = forms.CharField(
        max_length=253,
        label="Domain",
        help_text="The host name it logs in to, e.g. github.com (a pasted login URL is fine).",
        error_messages={"required": "Give the domain the credential logs in to, such as github.com."},
    )
    totp_secret = forms.CharField(
        required=False,
        max_length=256,
        label="TOTP secret",
        help_text="Optional: the base32 key behind the site's authenticator QR code (spaces are fine).",
        widget=SecretInput(),
    )
    field_order = ["name", "domain", "values", "totp_secret", "sso_provider"]

    def clean_domain(self):
        return _domain(self.cleaned_data["domain"])

    def clean_totp_secret(self):
        raw = self.cleaned_data["totp_secret"]
        if not raw.strip():
            return ""
        try:
            return normalize_totp_secret(raw)
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from None

    def clean_values(self):
        values, errors = self._new_rows()
        if errors:
            raise forms.ValidationError(errors)
        return values

    def rows(self) -> list[str]:
        """Names for the add rows: what was typed (after an error), padded with blank rows."""
        keys = [key for key in self.new_keys() if key] if self.is_bound else []
        return keys + [""] * max(MIN_ROWS_CREATE - len(keys), 1 if keys else 0)

    def payload(self) -> dict:
        data = self.cleaned_data
        return {
            "name": data["name"],
            "domain": data["domain"],
            "values": data["values"],
            "totp_secret": data["totp_secret"] or None,
            "sso_provider": data["sso_provider"] or None,
        }

    def summary(self) -> str:
        """For the audit log: names only, never a value or the secret."""
        data = self.cleaned_data
        keys = ", ".join(data["values"]) or "none"
        sso = f"; SSO: {data['sso_provider']}" if data["sso_provider"] else ""
        totp = "set" if data["totp_secret"] else "none"
        return f"{data['name']} ({data['domain']}); values: {keys}; TOTP: {totp}{sso}"

    def secrets(self) -> list[str]:
        return [*self._new_rows()[0].values(), self.data.get("totp_secret", "")]


class CredentialEditForm(CredentialFields):
    """A PATCH: only what changed is sent; stored values merge (add, overwrite, remove by name)."""

    TOTP_CHOICES = [("keep", "Keep"), ("replace", "Replace with"), ("remove", "Remove the TOTP secret")]

    totp_action = forms.ChoiceField(
        choices=TOTP_CHOICES, initial="keep", widget=forms.RadioSelect, label="TOTP"
    )
    totp_secret = forms.CharField(
        required=False, max_length=256, label="New TOTP secret", widget=SecretInput()
    )

    def __init__(self, *args, credential, **kwargs):
        self.credential = credential
        kwargs.setdefault("initial", {"name": credential.name, "sso_provider": credential.sso_provider or ""})
        super().__init__(*args, **kwargs)
        if not credential.has_totp_secret:
            self.fields["totp_action"].choices = [("keep", "No TOTP secret"), ("replace", "Add")]

    def clean_totp_secret(self):
        raw = self.cleaned_data["totp_secret"]
        if not raw.strip():
            return ""
        try:
            return normalize_totp_secret(raw)
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from None

    def clean(self):
        cleaned = super().clean()
        action = cleaned.get("totp_action")
        typed = bool(self.data.get("totp_secret", "").strip())
        if action == "keep" and typed:
            # Typing a new secret is asking to replace the stored one.
            action = cleaned["totp_action"] = "replace"
        if action == "replace" and "totp_secret" not in self.errors and not cleaned.get("totp_secret"):
            self.add_error("totp_secret", "Enter the new TOTP secret, or keep the current one.")
        if action == "remove" and typed:
            self.add_error("totp_secret", "To remove the TOTP secret, leave the new-secret field empty.")
        changes, errors = self._value_changes()
        if errors:
            self.add_error("values", errors)
        cleaned["changes"] = changes
        if not self.errors and not self.changes():
            self.add_error(None, "Nothing to change.")
        return cleaned

    def _value_changes(self) -> tuple[dict, list[str]]:
        errors: list[str] = []
        remove = [key for key in self.data.getlist("remove_key") if key]
        stored: dict[str, str] = {}
        for key, value in _lists(self.data, "existing_key", "existing_value"):
            if not value:
                continue
            if key in remove:
                errors.append(f"“{key}” is marked for removal and also has a new value: choose one.")
            elif error := _key_error(key):
                errors.append(error)
            else:
                stored[key] = value
        added, add_errors = self._new_rows()
        errors.extend(add_errors)
        for key in added:
            if key in stored:
                errors.append(f"“{key}” is given twice.")
            elif key in remove:
                errors.append(f"“{key}” is marked for removal and also added: choose one.")
        return {"values": {**stored, **added}, "remove_value_keys": remove}, errors

    def changes(self) -> dict:
        """The PATCH arguments: only what differs from the stored credential."""
        data = self.cleaned_data
        body: dict = {}
        if data.get("name") and data["name"] != self.credential.name:
            body["name"] = data["name"]
        value_changes = data.get("changes") or {}
        if value_changes.get("values"):
            body["values"] = value_changes["values"]
        if value_changes.get("remove_value_keys"):
            body["remove_value_keys"] = value_changes["remove_value_keys"]
        if data.get("totp_action") == "replace" and data.get("totp_secret"):
            body["totp_secret"] = data["totp_secret"]
        elif data.get("totp_action") == "remove" and self.credential.has_totp_secret:
            body["totp_secret"] = ""
        sso = data.get("sso_provider")
        if sso is not None and sso != (self.credential.sso_provider or ""):
            body["sso_provider"] = sso  # "" removes it
        return body

    def removed(self) -> list[str]:
        return [key for key in self.data.getlist("remove_key") if key] if self.is_bound else []

    def rows(self) -> list[str]:
        keys = [key for key in self.new_keys() if key] if self.is_bound else []
        return keys + [""] * max(NEW_ROWS_EDIT - len(keys), 1 if keys else 0)

    def summary(self, body: dict) -> str:
        """For the audit log: what changed, by name only."""
        parts = []
        if "name" in body:
            parts.append(f"renamed to {body['name']}")
        if body.get("values"):
            parts.append("set values: " + ", ".join(body["values"]))
        if body.get("remove_value_keys"):
            parts.append("removed values: " + ", ".join(body["remove_value_keys"]))
        if "totp_secret" in body:
            parts.append("TOTP secret " + ("replaced" if body["totp_secret"] else "removed"))
        if "sso_provider" in body:
            parts.append(f"SSO: {body['sso_provider'] or 'removed'}")
        return "; ".join(parts)

    def secrets(self) -> list[str]:
        typed = [value for _, value in _lists(self.data, "existing_key", "existing_value")]
        typed += [value for _, value in _lists(self.data, "new_key", "new_value")]
        return [*typed, self.data.get("totp_secret", "")]
