"""ASGI entry point: `uvicorn console.asgi:application`."""

import os

import django
from django.core.handlers.asgi import ASGIHandler

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")


class ConsoleASGIHandler(ASGIHandler):
    """Django's ASGI handler without a thread per request.

    Django wraps each request in a ThreadSensitiveContext, which gives every concurrent request its own
    worker thread (and database connection) for its ORM calls, alive until the response ends. A live pane is
    a response that lasts for hours: 2000 watching browsers held 2000 idle threads. Here every ORM call runs
    on the one process-wide thread instead, like a WSGI worker's: views are async and only make short,
    self-contained queries (no transaction spans an await), so nothing needs a thread of its own.
    """

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            raise ValueError(f"Django can only handle ASGI/HTTP connections, not {scope['type']}.")
        await self.handle(scope, receive, send)


django.setup(set_prefix=False)
application = ConsoleASGIHandler()
