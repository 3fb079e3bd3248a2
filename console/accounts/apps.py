from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "console.accounts"
    label = "accounts"
    verbose_name = "Accounts and organizations"

    def ready(self):
        from console.web import checks  # noqa: F401  (registers the deploy checks)
