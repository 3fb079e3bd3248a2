from django import forms

from console.accounts.forms import ServiceTargetMixin


class OrgSettingsForm(ServiceTargetMixin, forms.Form):
    name = forms.CharField(max_length=100)
    service_base_url = forms.URLField(label="Service base URL", max_length=300, assume_scheme="https")
    # Write-only: never rendered back (render_value=False); left empty, the current key stays.
    api_key = forms.CharField(
        label="API key",
        required=False,
        strip=True,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off"}),
        help_text="Leave empty to keep the current key (required when the base URL changes).",
    )
    default_project_id = forms.CharField(label="Default project", max_length=100, required=False)

    def __init__(self, *args, current_service_url: str = "", **kwargs):
        super().__init__(*args, **kwargs)
        self.current_service_url = current_service_url
