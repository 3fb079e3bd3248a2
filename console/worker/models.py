from django.db import models


class Beat(models.Model):
    """One periodic job's run for one slot (``periodic.py``): the row whose insert succeeds enqueues it.

    Every worker runs the same clock; the unique (name, slot) pair makes exactly one of them enqueue each
    slot, whatever the number of workers or replicas (PostgreSQL and SQLite alike).
    """

    name = models.CharField(max_length=100)
    slot = models.BigIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["name", "slot"], name="one_beat_per_slot")]

    def __str__(self):
        return f"{self.name} #{self.slot}"
