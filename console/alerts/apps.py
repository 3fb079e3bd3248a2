from django.apps import AppConfig


class AlertsConfig(AppConfig):
    name = "console.alerts"
    label = "alerts"
    verbose_name = "Alerts"

    def ready(self):
        from console.alerts import signals  # noqa: F401  (every organization gets its built-in rule)
