from django import forms
from django.contrib.auth.forms import AuthenticationForm, UserCreationForm

from console.accounts.models import AuditLog, Role


class LoginForm(AuthenticationForm):
    username = forms.CharField(
        label="Username or e-mail", max_length=254, widget=forms.TextInput(attrs={"autofocus": True})
    )


class SignupForm(UserCreationForm):
    """New account created from an invite link."""

    email = forms.EmailField(required=False)

    class Meta(UserCreationForm.Meta):
        fields = ("username", "email")


class OrgSettingsForm(forms.Form):
    name = forms.CharField(max_length=100)
    service_base_url = forms.URLField(label="Service base URL", max_length=300, assume_scheme="https")
    # Write-only: never rendered back (render_value=False); left empty, the current key stays.
    api_key = forms.CharField(
        label="API key",
        required=False,
        strip=True,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off"}),
        help_text="Leave empty to keep the current key.",
    )
    default_project_id = forms.CharField(label="Default project", max_length=100, required=False)


class InviteForm(forms.Form):
    email = forms.EmailField(required=False, help_text="Optional; for your records only.")
    role = forms.ChoiceField(choices=Role.choices, initial=Role.VIEWER)


class RoleForm(forms.Form):
    role = forms.ChoiceField(choices=Role.choices)


MAX_AUDIT_PAGE = 1_000_000


class AuditFilterForm(forms.Form):
    action = forms.CharField(required=False, label="Action starts with")
    actor = forms.CharField(required=False)
    outcome = forms.ChoiceField(required=False, choices=[("", "any"), *AuditLog.Outcome.choices])
    # Bounded so the offset stays a database integer (10^20 overflowed SQLite's and crashed the page).
    page = forms.IntegerField(required=False, min_value=1, max_value=MAX_AUDIT_PAGE)
