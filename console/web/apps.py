from django.apps import AppConfig

from console.web import checks  # noqa: F401  (registers the deploy checks of the inline middleware)


class WebConfig(AppConfig):
    """The shared view helpers: an app so that their deploy checks (checks.py) are registered."""

    name = "console.web"
    label = "web"
    verbose_name = "Pages"
