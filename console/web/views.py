from django.db import connection
from django.http import HttpResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET


@never_cache
@require_GET
async def healthz(request):
    """Liveness: the process answers. No database, no service."""
    return HttpResponse("ok", content_type="text/plain")


def _db_ok() -> bool:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        return True
    except Exception:  # any failure means not ready; the reason goes to the log, not the probe
        return False


@never_cache
@require_GET
def readyz(request):
    """Readiness: the database answers. Sync because the DB driver is."""
    if _db_ok():
        return HttpResponse("ok", content_type="text/plain")
    return HttpResponse("database unavailable", content_type="text/plain", status=503)
