from django import forms
from django.conf import settings
from django.contrib.auth.forms import AuthenticationForm, UserCreationForm
from django.utils.text import capfirst

from console.accounts.models import AuditLog, Role
from console.service import targets

URL_CHANGED_NEEDS_KEY = (
    "The service base URL changed: enter the API key for the new URL. "
    "The stored key is never sent to another address."
)


class ServiceTargetMixin:
    """The base URL and the API key of an organization, checked together (settings page and Django admin).

    The URL must be one ``targets`` lets the key go to (this resolves its host: blocking, so async views
    run ``is_valid`` off the event loop). A changed URL needs the key again in the same submission;
    ``Organization.save`` clears a stored key whose URL changed, whatever form did it.
    """

    current_service_url = ""

    def clean(self):
        cleaned = super().clean()
        url = cleaned.get("service_base_url")
        if not url:
            return cleaned
        try:
            targets.check_url(url, allow_private=settings.SERVICE_URL_ALLOW_PRIVATE)
        except targets.ForbiddenTarget as exc:
            self.add_error("service_base_url", capfirst(exc.message) + ".")
            return cleaned
        if url != self.current_service_url and not cleaned.get("api_key"):
            self.add_error("api_key", URL_CHANGED_NEEDS_KEY)
        return cleaned


class LoginForm(AuthenticationForm):
    username = forms.CharField(
        label="Username or e-mail", max_length=254, widget=forms.TextInput(attrs={"autofocus": True})
    )


class SignupForm(UserCreationForm):
    """New account created from an invite link."""

    email = forms.EmailField(required=False)

    class Meta(UserCreationForm.Meta):
        fields = ("username", "email")


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


class InviteForm(forms.Form):
    email = forms.EmailField(
        help_text="Who the link is for: shown beside the pending invite.",
        error_messages={"required": "Give the e-mail address of the person you invite."},
    )
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
