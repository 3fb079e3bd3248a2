"""Forms of the credential providers pages. The token is write-only: never rendered back."""

from __future__ import annotations

from django import forms

from console.service.contract import CREDENTIAL_PROVIDER_TYPES

TYPE_LABELS = {"onepassword": "1Password"}


class ProviderForm(forms.Form):
    name = forms.CharField(max_length=255, help_text="Unique in the organization; auth connections name it.")
    provider_type = forms.ChoiceField(
        choices=[(t, TYPE_LABELS.get(t, t)) for t in CREDENTIAL_PROVIDER_TYPES], label="Provider"
    )
    token = forms.CharField(
        max_length=4096,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text="The 1Password service account token. Stored by the service and never shown again.",
    )
    cache_ttl_seconds = forms.IntegerField(
        min_value=0, max_value=86400, initial=300, label="Cache items for (seconds)"
    )

    def clean_token(self) -> str:
        value = self.cleaned_data["token"].strip()
        if not value.startswith("ops_"):
            raise forms.ValidationError("A 1Password service account token starts with ops_.")
        return value


class EditForm(forms.Form):
    name = forms.CharField(max_length=255)
    enabled = forms.BooleanField(required=False)
    priority = forms.IntegerField(min_value=0, max_value=1000, help_text="Lower is checked first.")
    token = forms.CharField(
        required=False,
        max_length=4096,
        label="New token",
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text="Leave empty to keep the current token.",
    )

    def clean_token(self) -> str:
        value = self.cleaned_data["token"].strip()
        if value and not value.startswith("ops_"):
            raise forms.ValidationError("A 1Password service account token starts with ops_.")
        return value


class ItemPickForm(forms.Form):
    """The searchable provider-item field, for pages that pick an item with a GET form."""

    credential_item = forms.CharField(
        required=False,
        max_length=600,
        label="From a credential provider item",
        help_text="Search your providers' items (1Password) to fill in the name and domain.",
    )
