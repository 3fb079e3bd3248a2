"""ASGI entry point: `uvicorn console.asgi:application`."""

import os

import django
from django.core.handlers.asgi import ASGIHandler

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")


class ConsoleASGIHandler(ASGIHandler):
    """Django's ASGI handler without a thread per request, and with larger response messages.

    Django wraps each request in a ThreadSensitiveContext, which gives every concurrent request its own
    worker thread (and database connection) for its ORM calls, alive until the response ends. A live pane is
    a response that lasts for hours: 2000 watching browsers held 2000 idle threads. Here every ORM call runs
    on the one process-wide thread instead, like a WSGI worker's: views are async and only make short,
    self-contained queries (no transaction spans an await), so nothing needs a thread of its own.

    Django sends a body in messages of at most ``chunk_size`` bytes (64 KiB), each a copy of its part and a
    write of its own: a live pane's viewer writes a burst's frames in one chunk (``console.live.hub``: at
    most ``CHUNK_BYTES`` of the log, or one entry of it, which holds up to ``HOLD_BYTES`` and one more read's
    frames), sent here as one message.
    """

    chunk_size = 1024 * 1024

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            raise ValueError(f"Django can only handle ASGI/HTTP connections, not {scope['type']}.")
        limit = max_request_bytes()
        declared = dict(scope.get("headers") or []).get(b"content-length", b"").strip()
        if declared.isdigit() and int(declared) > limit:
            await _too_large(send, limit)
            return
        received = 0

        async def bounded_receive():
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise _TooLarge
            return message

        try:
            await self.handle(scope, bounded_receive, send)
        except _TooLarge:
            # Django reads the whole body before anything else runs (``read_body``), so nothing was sent.
            await _too_large(send, limit)


class _TooLarge(Exception):
    pass


def max_request_bytes() -> int:
    """The largest request body the console reads: its largest upload and some room for the form.

    Django's ASGI handler reads every body whole, to memory then a temporary file, before any middleware,
    view, login or CSRF check runs: a POST of any size to any URL, by anyone, was written to the console's
    disk for as long as it lasted. Past this it is a 413, refused on its declared length before it is read.
    """
    from django.conf import settings

    from console.deployments.forms import MAX_UPLOAD_BYTES as DEPLOYMENT

    configured = getattr(settings, "MAX_REQUEST_BYTES", None)
    if configured:
        return int(configured)
    largest = max(
        getattr(settings, "SESSION_UPLOAD_MAX_BYTES", 0),
        getattr(settings, "EXTENSION_MAX_UPLOAD_BYTES", 0),
        DEPLOYMENT,
    )
    return largest + 1024 * 1024


async def _too_large(send, limit: int) -> None:
    body = f"The request is larger than the console accepts ({limit // (1024 * 1024)} MiB).\n".encode()
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(body)).encode()),
                (b"x-content-type-options", b"nosniff"),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


django.setup(set_prefix=False)
application = ConsoleASGIHandler()
