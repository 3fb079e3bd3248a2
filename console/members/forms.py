from django import forms
from django.contrib.auth.forms import UserCreationForm

from console.accounts.models import Role


class InviteForm(forms.Form):
    email = forms.EmailField(
        help_text="Who the link is for: shown beside the pending invite.",
        error_messages={"required": "Give the e-mail address of the person you invite."},
    )
    role = forms.ChoiceField(choices=Role.choices, initial=Role.VIEWER)


class RoleForm(forms.Form):
    role = forms.ChoiceField(choices=Role.choices)


class SignupForm(UserCreationForm):
    """New account created from an invite link."""

    email = forms.EmailField(required=False)

    class Meta(UserCreationForm.Meta):
        fields = ("username", "email")

    @staticmethod
    def initial_for(email: str) -> dict:
        """The invited address, and a username from its local part (the person may change both)."""
        return {"email": email, "username": email.partition("@")[0]}
