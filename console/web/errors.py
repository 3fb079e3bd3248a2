"""Error pages. Plain templates (no context processors needing the DB) so they render in any state."""

from django.http import HttpResponse
from django.template.loader import render_to_string


def _page(template: str, status: int, request=None) -> HttpResponse:
    return HttpResponse(
        render_to_string(template, {"request_path": getattr(request, "path", "")}), status=status
    )


def not_found(request, exception=None):
    return _page("errors/404.html", 404, request)


def forbidden(request, exception=None):
    return _page("errors/403.html", 403, request)


def server_error(request):
    return _page("errors/500.html", 500, request)
