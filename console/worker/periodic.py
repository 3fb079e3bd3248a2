"""Periodic jobs for the worker: every worker keeps the same clock, and exactly one enqueues each run.

The queue and the workers are django-tasks with its database backend (``django_tasks_db``): a task is a
row, claimed by one worker with ``SELECT … FOR UPDATE SKIP LOCKED`` (PostgreSQL) or an exclusive
transaction (SQLite), so several workers never run the same task. What the library leaves out is a clock:
``fire_due`` is it. Each job's time is cut into slots of ``every()`` seconds; for a new slot, every worker
tries to insert ``Beat(name, slot)`` and, in the same transaction, enqueue the job's task. The unique
(name, slot) pair lets exactly one insert through, so a slot's task is enqueued once however many workers
(or replicas) run; a slot no worker saw (all were down) is simply skipped, and the next one runs.

Apps register their jobs in a ``tasks`` module (``register``); the worker command imports every installed
app's ``tasks`` module before it starts.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from django.db import IntegrityError, close_old_connections, transaction

from console.worker.models import Beat

log = logging.getLogger("console.worker")

# Beat rows kept per job (older ones are deleted as new ones are written): enough to read recent history.
KEEP_BEATS = 100


@dataclass(frozen=True)
class Periodic:
    name: str
    every: Callable[[], float]  # seconds, read at run time (settings may change in tests)
    enqueue: Callable[[int], object]  # enqueues the job's task for a slot (called inside the transaction)


_jobs: dict[str, Periodic] = {}


def register(name: str, every: Callable[[], float], enqueue: Callable[[int], object]) -> None:
    _jobs[name] = Periodic(name, every, enqueue)


def jobs() -> list[Periodic]:
    return list(_jobs.values())


def slot_of(job: Periodic, now: float) -> int:
    return math.floor(now / max(job.every(), 0.1))


def fire(job: Periodic, slot: int) -> bool:
    """Enqueue ``job`` for ``slot`` unless another worker already did: True when this call did."""
    try:
        with transaction.atomic():
            Beat.objects.create(name=job.name, slot=slot)
            job.enqueue(slot)
    except IntegrityError:
        return False
    Beat.objects.filter(name=job.name, slot__lt=slot - KEEP_BEATS).delete()
    return True


class Clock:
    """The beat of one worker process: a thread that fires each job once per new slot."""

    def __init__(self, *, tick: float = 0.5):
        self.tick = tick
        self.seen: dict[str, int] = {}
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self.run, name="worker-clock", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.stopped.set()

    def beat(self, now: float | None = None) -> list[str]:
        """Fire every job whose slot moved on since this clock last looked; the names this call enqueued."""
        now = time.time() if now is None else now
        fired = []
        for job in jobs():
            slot = slot_of(job, now)
            if self.seen.get(job.name) == slot:
                continue
            self.seen[job.name] = slot
            if fire(job, slot):
                fired.append(job.name)
        return fired

    def run(self) -> None:
        while not self.stopped.is_set():
            close_old_connections()
            try:
                self.beat()
            except Exception:  # a database hiccup must not stop the clock
                log.exception("the worker's clock could not enqueue its jobs; trying again")
            self.stopped.wait(self.tick)
        close_old_connections()
