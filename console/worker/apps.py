from django.apps import AppConfig


class WorkerConfig(AppConfig):
    name = "console.worker"
    label = "worker"
    verbose_name = "Background worker"
