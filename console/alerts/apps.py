from django.apps import AppConfig


class AlertsConfig(AppConfig):
    name = "console.alerts"
    label = "alerts"
    verbose_name = "Alerts"

    def ready(self):
        from console.alerts import signals  # noqa: F401  (built-in rules for every org, demo rules for the demo)
