"""What the settings page and the Django admin share: an organization's service target, checked."""

from django.conf import settings
from django.utils.text import capfirst

from console.service import targets

URL_CHANGED_NEEDS_KEY = (
    "The service base URL changed: enter the API key for the new URL. "
    "The stored key is never sent to another address."
)


class ServiceTargetMixin:
    """The base URL and the API key of an organization, checked together (settings page and Django admin).

    The URL must be one ``targets`` lets the key go to (this resolves its host: blocking, so async views
    run ``is_valid`` off the event loop). A changed URL needs the key again in the same submission;
    ``Organization.save`` clears a stored key whose URL changed, whatever form did it.
    """

    current_service_url = ""

    def clean(self):
        cleaned = super().clean()
        url = cleaned.get("service_base_url")
        if not url:
            return cleaned
        try:
            targets.check_url(url, allow_private=settings.SERVICE_URL_ALLOW_PRIVATE)
        except targets.ForbiddenTarget as exc:
            self.add_error("service_base_url", capfirst(exc.message) + ".")
            return cleaned
        if url != self.current_service_url and not cleaned.get("api_key"):
            self.add_error("api_key", URL_CHANGED_NEEDS_KEY)
        return cleaned
