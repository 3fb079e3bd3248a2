"""Forms of the vault provider configs pages. The client secret is write-only: its input never renders
what was typed, not even after an error elsewhere."""

from __future__ import annotations

from django import forms

from console.service.vault_provider_configs import PROVIDERS


class WriteOnlyInput(forms.PasswordInput):
    def __init__(self, attrs=None):
        super().__init__(attrs={"autocomplete": "off", **(attrs or {})}, render_value=False)


class ConfigForm(forms.Form):
    name = forms.CharField(
        max_length=255, help_text="Unique in the organization; items pick it by name or id."
    )
    provider = forms.ChoiceField(choices=[("link", "Link (Stripe)"), ("agentcard", "AgentCard")])
    client_id = forms.CharField(max_length=512, label="Client id")
    client_secret = forms.CharField(
        max_length=4096, widget=WriteOnlyInput(), help_text="Stored by the service and never shown again."
    )
    publishable_key = forms.CharField(
        max_length=512, required=False, help_text="Link only: the Stripe publishable key (public)."
    )

    def clean(self):
        data = super().clean()
        if data.get("publishable_key") and data.get("provider") != "link":
            self.add_error("publishable_key", "Only Link configurations take a publishable key.")
        if data.get("provider") not in PROVIDERS:
            self.add_error("provider", "Choose Link or AgentCard.")
        return data


class EditForm(forms.Form):
    name = forms.CharField(max_length=255)
    client_secret = forms.CharField(
        max_length=4096,
        required=False,
        widget=WriteOnlyInput(),
        help_text="Leave empty to keep the current one.",
    )
    publishable_key = forms.CharField(max_length=512, required=False)

    def __init__(self, *args, provider: str = "", **kwargs):
        super().__init__(*args, **kwargs)
        if provider != "link":
            del self.fields["publishable_key"]
