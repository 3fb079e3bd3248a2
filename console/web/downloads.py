"""Downloads streamed from the service to the browser, chunk by chunk: the console never holds a whole file.

``opened`` enters a client download (an async context manager: ``extensions.download_extension``,
``browser_files.read_file``...) and leaves nothing open if it fails; ``attachment`` answers with what it
gives, closing the download when the body ends or the browser leaves. Names and types are the console's own,
never the service's (a hostile one answered ``text/html``, or ``inline; filename="../../evil.html"``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from typing import TypeVar

from django.http import Http404, StreamingHttpResponse

from console.service import NotFound

T = TypeVar("T")


async def opened(
    download: AbstractAsyncContextManager[T], what: str, *, missing: tuple[type[Exception], ...] = (NotFound,)
) -> tuple[T, AsyncExitStack]:
    """What ``download`` gives and the stack that closes it; a 404 ("No such <what>") for ``missing``."""
    stack = AsyncExitStack()
    try:
        return await stack.enter_async_context(download), stack
    except missing:
        await stack.aclose()
        raise Http404(f"No such {what}") from None
    except BaseException:
        await stack.aclose()
        raise


async def _body(chunks: AsyncIterator[bytes], stack: AsyncExitStack):
    try:
        async for chunk in chunks:
            yield chunk
    finally:
        await stack.aclose()


def attachment(
    chunks: AsyncIterator[bytes],
    stack: AsyncExitStack,
    *,
    filename: str,
    content_type: str,
    length: int | str | None = None,
    disposition: str = "attachment",
    status: int = 200,
) -> StreamingHttpResponse:
    """The streamed answer: ``filename`` (already safe) as an attachment (or ``inline``), never sniffed."""
    response = StreamingHttpResponse(_body(chunks, stack), content_type=content_type, status=status)
    response["Content-Disposition"] = f'{disposition}; filename="{filename}"'
    response["X-Content-Type-Options"] = "nosniff"
    if length not in (None, ""):
        response["Content-Length"] = str(length)
    return response
