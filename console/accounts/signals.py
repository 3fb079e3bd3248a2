"""What the accounts app announces to the apps above it (which subscribe; it imports none of them)."""

from django.dispatch import Signal

# ``manage.py demo`` made (or refreshed) the Demo organization: ``sender`` is the command's class, ``org``
# the organization. Apps above add their own demo content (console/alerts/signals.py: its alert rules).
demo_ready = Signal()
