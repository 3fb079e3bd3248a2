from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend


def find_user(identifier: str):
    """The account a login identifier names: an e-mail address or a username, in any case."""
    users = get_user_model().objects.order_by("pk")
    if "@" in identifier:
        return users.filter(email__iexact=identifier).first()
    return users.filter(username__iexact=identifier).first()


def lockout_username(request, credentials=None) -> str:
    """AXES_USERNAME_CALLABLE: the key failed logins count against, one per account however it is named.

    Typed `LOCKME`, `lockme` or `lockme@example.com`, it is the account's username, so each spelling does not
    get its own tries; an identifier that names no account counts under its lowercase form.
    """
    field = settings.AXES_USERNAME_FORM_FIELD
    identifier = credentials.get(field) if credentials else getattr(request, "POST", {}).get(field)
    if not identifier:
        return ""
    user = find_user(identifier)
    return user.get_username() if user is not None else identifier.lower()


class UsernameOrEmailBackend(ModelBackend):
    """Accept either the username or the e-mail address in the login form's username field."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        if username is None or password is None:
            return None
        user = find_user(username)
        if user is None:
            # Spend the same time as a real check, so response time does not reveal which accounts exist.
            get_user_model()().set_password(password)
            return None
        if user.check_password(password) and self.user_can_authenticate(user):
            return user
        return None
