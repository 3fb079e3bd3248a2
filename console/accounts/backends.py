from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend


class UsernameOrEmailBackend(ModelBackend):
    """Accept either the username or the e-mail address in the login form's username field."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        if username is None or password is None:
            return None
        User = get_user_model()
        if "@" in username:
            user = User.objects.filter(email__iexact=username).order_by("pk").first()
        else:
            user = User.objects.filter(username__iexact=username).first()
        if user is None:
            # Spend the same time as a real check, so response time does not reveal which accounts exist.
            User().set_password(password)
            return None
        if user.check_password(password) and self.user_can_authenticate(user):
            return user
        return None
