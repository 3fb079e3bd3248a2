"""Forms of the vaults pages. Field values are write-only: their inputs never render what was typed."""

from __future__ import annotations

import re

from django import forms

from console.service.contract import VAULT_FIELD_TYPES

KEY = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
FIELD = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
SENSITIVE_BY_DEFAULT = ("password", "totp", "passkey")


class WriteOnlyTextarea(forms.Textarea):
    def format_value(self, value):
        return None


class VaultForm(forms.Form):
    name = forms.CharField(max_length=255, help_text="Creates the vault, or opens the one of that name.")


class ItemForm(forms.Form):
    key = forms.CharField(max_length=128, help_text="Unique in the vault, e.g. shop-login.")
    description = forms.CharField(max_length=500, required=False)
    fields_spec = forms.CharField(
        label="Fields",
        widget=forms.Textarea(
            attrs={"rows": 4, "placeholder": "username email\npassword password\notp totp optional"}
        ),
        help_text="One per line: name type [sensitive|plain] [optional]. "
        f"Types: {', '.join(VAULT_FIELD_TYPES)}. "
        "Passwords, TOTP and passkeys are sensitive unless marked plain.",
    )
    values = forms.CharField(
        required=False,
        widget=WriteOnlyTextarea(
            attrs={"rows": 3, "placeholder": "username: buyer@example.com", "autocomplete": "off"}
        ),
        help_text="Optional, one name: value per line. Sensitive values are never shown again.",
    )

    def clean_key(self) -> str:
        value = self.cleaned_data["key"].strip()
        if not KEY.match(value):
            raise forms.ValidationError("Letters, digits, . _ : - only.")
        return value

    def clean_fields_spec(self) -> list[dict]:
        fields = []
        for number, line in enumerate(self.cleaned_data["fields_spec"].splitlines(), start=1):
            words = line.split()
            if not words:
                continue
            if len(words) < 2 or not FIELD.match(words[0]) or words[1] not in VAULT_FIELD_TYPES:
                raise forms.ValidationError(f"Line {number}: write name type, e.g. password password.")
            flags = set(words[2:])
            if flags - {"sensitive", "plain", "optional"}:
                raise forms.ValidationError(f"Line {number}: the flags are sensitive, plain and optional.")
            sensitive = "sensitive" in flags or (words[1] in SENSITIVE_BY_DEFAULT and "plain" not in flags)
            fields.append(
                {
                    "name": words[0],
                    "type": words[1],
                    "sensitive": sensitive,
                    "required": "optional" not in flags,
                }
            )
        if not fields:
            raise forms.ValidationError("Give at least one field.")
        if len({f["name"] for f in fields}) != len(fields):
            raise forms.ValidationError("Each field name once.")
        return fields

    def clean(self):
        cleaned = super().clean()
        names = {f["name"] for f in cleaned.get("fields_spec") or []}
        values = {}
        for number, line in enumerate((cleaned.get("values") or "").splitlines(), start=1):
            if not line.strip():
                continue
            name, sep, value = line.partition(":")
            if not sep or name.strip() not in names:
                # Never echo the line: it may hold the secret.
                self.add_error("values", f"Line {number}: write name: value, for a field listed above.")
                continue
            values[name.strip()] = value.strip()
        cleaned["values"] = values
        return cleaned

    def item_fields(self) -> list[dict]:
        values = self.cleaned_data["values"]
        return [
            {**f, **({"value": values[f["name"]]} if f["name"] in values else {})}
            for f in self.cleaned_data["fields_spec"]
        ]


class ValueForm(forms.Form):
    field = forms.ChoiceField()
    value = forms.CharField(
        required=False,
        max_length=4096,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text="Empty clears the value.",
    )

    def __init__(self, *args, names=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["field"].choices = [(n, n) for n in names]
