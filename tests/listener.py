"""Tiny HTTP servers on loopback: one that records what reaches it (a stand-in for an attacker's listener),
``serving`` for a test's own hostile or scripted service, and ``console_on_thread`` for the console itself
under uvicorn in the test's process (so the test's settings apply to it)."""

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Listener:
    url: str
    status: int = 200
    body: bytes = b""
    content_type: str = "text/plain"
    # (method, path, headers) of every request received.
    received: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)

    def authorizations(self) -> list[str]:
        return [headers.get("authorization", "") for _, _, headers in self.received]


@contextmanager
def serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """``handler`` answering on a free loopback port (its URL), quietly, in threads; stopped after."""
    quiet = type(handler.__name__, (handler,), {"log_message": lambda self, *args: None})
    server = ThreadingHTTPServer(("127.0.0.1", 0), quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def listening() -> Iterator[Listener]:
    listener = Listener(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            headers = {k.lower(): v for k, v in self.headers.items()}
            listener.received.append((self.command, self.path, headers))
            self.send_response(listener.status)
            self.send_header("Content-Type", listener.content_type)
            self.send_header("Content-Length", str(len(listener.body)))
            self.end_headers()
            self.wfile.write(listener.body)

        do_POST = do_GET

    with serving(Handler) as listener.url:
        yield listener


@contextmanager
def console_on_thread() -> Iterator[str]:
    """The console's ASGI application under uvicorn on a free loopback port, in a thread of the test's own
    process (its URL); stopped after. The test's ``settings`` fixture changes apply to it."""
    import uvicorn

    from tests.sandbox_fixtures import free_port

    port = free_port()
    config = uvicorn.Config(
        "console.asgi:application", host="127.0.0.1", port=port, log_level="warning", lifespan="off"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the console did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=15)
