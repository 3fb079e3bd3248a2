"""Tiny HTTP servers on loopback: one that records what reaches it (a stand-in for an attacker's listener),
and ``serving`` for a test's own hostile or scripted service."""

import threading
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
