from django.apps import AppConfig


class SandboxConfig(AppConfig):
    """Registered only so that ``manage.py sandbox`` exists; the sandbox itself never imports Django."""

    name = "console.sandbox"
    label = "sandbox"
