import os

from django.core.management.base import BaseCommand

from console.sandbox.server import reset_state, serve


class Command(BaseCommand):
    help = "Run the sandbox (a local Browser Automation Service) on --host/--port (default 127.0.0.1:8100)."

    def add_arguments(self, parser):
        parser.add_argument("--host", default=os.environ.get("SANDBOX_HOST", "127.0.0.1"))
        parser.add_argument("--port", type=int, default=int(os.environ.get("SANDBOX_PORT", "8100")))
        parser.add_argument("--log-level", default="warning")
        parser.add_argument(
            "--reset",
            action="store_true",
            help="Remove the saved state (SANDBOX_STATE and its files) first, so the sandbox starts fresh.",
        )

    def handle(self, *args, host, port, log_level, reset=False, **options):
        if reset:
            reset_state(self.stdout)
        self.stdout.write(f"Sandbox listening on http://{host}:{port}/ (Ctrl-C stops it)")
        serve(host, port, log_level=log_level)
