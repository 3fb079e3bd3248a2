from django.apps import AppConfig


class SigninConfig(AppConfig):
    name = "console.signin"
    label = "signin"
    verbose_name = "Sign-in: two-factor, single sign-on, sessions"

    def ready(self):
        from console.signin import signals  # noqa: F401  (audits what allauth does, tracks sessions)
