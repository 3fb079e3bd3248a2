"""Runs the sandbox under uvicorn: ``python -m console.sandbox`` or ``python manage.py sandbox``."""

from __future__ import annotations

import argparse
import logging
import os
import re
import sys

import uvicorn

from console.sandbox.app import build_app
from console.sandbox.core import store
from console.sandbox.core.http import StreamDropped
from console.sandbox.resources import cdp_proxy


class _QuietDrops(logging.Filter):
    """An injected stream drop is the point of the fault, not an error worth a traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and record.exc_info[0] is StreamDropped)


class _RedactTokens(logging.Filter):
    """Live view, CDP and replay URLs carry their credential in the query: it never reaches the log."""

    TOKEN = re.compile(r"((?:jwt|token)=)[^&\s\"]+")

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(
                self.TOKEN.sub(r"\1[redacted]", arg) if isinstance(arg, str) else arg for arg in record.args
            )
        return True


def serve(host: str = "127.0.0.1", port: int = 8100, *, log_level: str = "warning") -> None:
    logging.getLogger("uvicorn.error").addFilter(_QuietDrops())
    for name in ("uvicorn.error", "uvicorn.access"):
        logging.getLogger(name).addFilter(_RedactTokens())
    try:
        app = build_app()
    except store.StateError as exc:
        # A clear sentence, not a traceback: the operator decides whether to move the file or reset it.
        print(f"sandbox: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    uvicorn.run(
        app,
        host=host,
        port=port,
        log_level=log_level,
        lifespan="on",
        timeout_graceful_shutdown=2,
        # A larger websocket message is refused from its frame's header (close 1009), never read: the CDP
        # guard parses every message on the event loop (cdp_proxy.MAX_MESSAGE_BYTES).
        ws_max_size=cdp_proxy.max_message_bytes(),
    )


def reset_state(out=sys.stdout) -> None:
    """``--reset``: the state file and its files go, so this start seeds a fresh demo."""
    path = store.configured_path()
    if path is None:
        print("SANDBOX_STATE is not set: the sandbox keeps its state in memory, nothing to reset", file=out)
        return
    try:
        removed = store.reset(path)
    except store.StateError as exc:
        print(f"sandbox: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    print(
        f"Sandbox state reset ({len(removed)} removed at {path})" if removed else f"No state at {path}",
        file=out,
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Run the Browser Automation Service sandbox.")
    parser.add_argument("--host", default=os.environ.get("SANDBOX_HOST", "127.0.0.1"))
    parser.add_argument("--port", type=int, default=int(os.environ.get("SANDBOX_PORT", "8100")))
    parser.add_argument("--log-level", default=os.environ.get("SANDBOX_LOG_LEVEL", "warning"))
    parser.add_argument(
        "--reset", action="store_true", help="remove the saved state (SANDBOX_STATE) first: start fresh"
    )
    args = parser.parse_args(argv)
    if args.reset:
        reset_state()
    serve(args.host, args.port, log_level=args.log_level)
