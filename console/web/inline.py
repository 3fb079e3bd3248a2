"""Django's built-in middleware, run on the event loop instead of hopping to a worker thread.

Under ASGI, ``MiddlewareMixin`` runs every ``process_request``/``process_response`` through
``sync_to_async(thread_sensitive=True)``: about a dozen hops per request, all queued on one thread. The
hooks below only read and write the request and the response (no I/O), so they run inline. The session's
``process_response`` saves to the database when the session changed: then, and only then, it still runs in
the worker thread.
"""

from asgiref.sync import markcoroutinefunction, sync_to_async
from django.contrib.auth import middleware as auth
from django.contrib.messages import middleware as messages
from django.contrib.sessions import middleware as sessions
from django.middleware import clickjacking, common, csrf, security


class AsyncMiddleware:
    """A middleware of the console's own that runs on the event loop only (subclasses add their hooks)."""

    async_capable = True
    sync_capable = False

    def __init__(self, get_response):
        self.get_response = get_response
        markcoroutinefunction(self)

    async def __call__(self, request):
        return await self.get_response(request)


class Inline:
    async def __acall__(self, request):
        response = None
        if hasattr(self, "process_request"):
            response = self.process_request(request)
        response = response or await self.get_response(request)
        if hasattr(self, "process_response"):
            response = self.process_response(request, response)
        return response


class SecurityMiddleware(Inline, security.SecurityMiddleware):
    pass


class CommonMiddleware(Inline, common.CommonMiddleware):
    pass


class CsrfViewMiddleware(Inline, csrf.CsrfViewMiddleware):
    async def process_view(self, request, callback, callback_args, callback_kwargs):
        # Checks the token against the cookie and the already-read body: no I/O.
        return super().process_view(request, callback, callback_args, callback_kwargs)


class AuthenticationMiddleware(Inline, auth.AuthenticationMiddleware):
    pass


class MessageMiddleware(Inline, messages.MessageMiddleware):
    """Inline only with cookie storage (settings.MESSAGE_STORAGE): it never touches the database."""


class XFrameOptionsMiddleware(Inline, clickjacking.XFrameOptionsMiddleware):
    pass


class SessionMiddleware(Inline, sessions.SessionMiddleware):
    async def __acall__(self, request):
        self.process_request(request)  # a lazy session store: nothing is read yet
        response = await self.get_response(request)
        session = request.session
        if session.modified or (session.accessed and self._saves_every_request()):
            return await sync_to_async(self.process_response, thread_sensitive=True)(request, response)
        return self.process_response(request, response)  # Vary header and cookie deletion only

    @staticmethod
    def _saves_every_request() -> bool:
        from django.conf import settings

        return settings.SESSION_SAVE_EVERY_REQUEST
