"""``python manage.py worker``: the background worker (alerts evaluation and delivery).

django-tasks' database worker (``django_tasks_db``'s ``Worker``: one task at a time, claimed so no other
worker runs it) with the periodic clock of ``console.worker.periodic`` beside it. Run one or more, on any
machines that reach the database; none evaluates or sends twice.
"""

from __future__ import annotations

import logging
import os
import socket

from django.conf import settings
from django.core.management.base import BaseCommand
from django.utils.module_loading import autodiscover_modules
from django_tasks_db.management.commands.db_worker import Worker

from console.worker.periodic import Clock, jobs

log = logging.getLogger("console.worker")


class Command(BaseCommand):
    help = "Run the background worker: periodic alert evaluations and deliveries (several may run)."

    def add_arguments(self, parser):
        parser.add_argument(
            "--interval",
            type=float,
            default=settings.WORKER_POLL_SECONDS,
            help="seconds between looks at the queue when it is empty (default: WORKER_POLL_SECONDS)",
        )
        parser.add_argument(
            "--worker-id", default="", help="how this worker is named in the logs and records"
        )
        parser.add_argument("--no-clock", action="store_true", help="run queued tasks only; enqueue nothing")

    def handle(self, *args, interval: float, worker_id: str, no_clock: bool, verbosity: int = 1, **options):
        autodiscover_modules("tasks")
        # The queue's own logs (every task started and finished) only when asked for (-v 2).
        for name in ("django_tasks", "django_tasks_db", "django.tasks"):
            logging.getLogger(name).setLevel(logging.INFO if verbosity >= 2 else logging.WARNING)
        worker_id = (worker_id or f"{socket.gethostname()}:{os.getpid()}")[:64]
        os.environ["CONSOLE_WORKER_ID"] = worker_id
        clock = Clock()
        if not no_clock:
            clock.start()
        names = ", ".join(job.name for job in jobs()) or "none"
        if verbosity:
            self.stdout.write(f"Worker {worker_id}: periodic jobs {names}; polling every {interval:g} s")
        worker = Worker(
            queue_names=["*"],
            interval=interval,
            batch=False,
            backend_name="default",
            startup_delay=False,
            max_tasks=None,
            worker_id=worker_id,
            excluded_queue_names=[],
        )
        worker.configure_signals()
        try:
            worker.run()
        finally:
            clock.stop()
