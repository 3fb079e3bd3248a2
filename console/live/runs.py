"""The event stream of a run (an invocation, a deployment) relayed to its page until the run ends.

Both streams speak alike (notes §12, §13): ``log`` lines, ``<kind>_state`` events carrying the record
(its summary is redrawn and a state line logged), ``error`` events, and kinds a console may not know. The
upstream replays the run from its start on every connection, so new viewers get the history from the hub's
buffer; it is not resumable (the hub numbers the frames).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.template.loader import render_to_string

from console.live import Channel, Frame, relay_response, service_stream
from console.service.records import Record, parse_datetime
from console.web.status import describe


@dataclass(frozen=True)
class Run:
    kind: (
        str  # "invocation" or "deployment": its state events are "<kind>_state", the record under data[kind]
    )
    record: type[Record]
    summary: str  # the template partial redrawn on each state event (``sse-swap="state"``)
    log_line: str  # the template partial of one line of the log pane
    summary_context: Callable[[Any, str], dict]  # (record, org slug): the same for every viewer
    terminal: frozenset[str]  # the statuses after which nothing more comes
    ended_message: str
    # The log line's text of another kind of event the page shows (``None``: not shown).
    other: Callable[[str, dict], str | None] = lambda kind, data: None

    def log_frame(self, line: dict) -> Frame:
        return Frame(html=render_to_string(self.log_line, {"line": line}), event="log")

    def render(self, org_slug: str) -> Callable[[Any], list[Frame] | None]:
        """Turn one upstream event into frames: log lines for the log pane, the summary on state changes."""

        def render_one(event) -> list[Frame] | None:
            data = event.data if isinstance(event.data, dict) else {}
            kind = data.get("event")
            at = parse_datetime(data.get("timestamp"))
            if kind == "log":
                return [self.log_frame({"at": at, "kind": "log", "text": str(data.get("message", ""))})]
            if kind == f"{self.kind}_state":
                record = self.record.from_json(data.get(self.kind))
                reason = f" ({record.status_reason})" if record.status_reason else ""
                summary = render_to_string(self.summary, self.summary_context(record, org_slug))
                return [
                    self.log_frame(
                        {
                            "at": at,
                            "kind": f"state state-{record.status}",
                            "text": f"State: {describe(self.kind, record.status)[0]}{reason}",
                        }
                    ),
                    Frame(html=summary, event="state"),
                ]
            if kind == "error":
                error = data.get("error") if isinstance(data.get("error"), dict) else {}
                text = f"Error from the service: {error.get('message') or error.get('code') or 'unknown'}"
                return [self.log_frame({"at": at, "kind": "error", "text": text})]
            text = self.other(kind, data)
            if text is None:
                return None  # sse_heartbeat and kinds this console does not know
            return [self.log_frame({"at": at, "kind": "summary", "text": text})]

        return render_one

    def is_terminal(self, event) -> bool:
        data = event.data if isinstance(event.data, dict) else {}
        if data.get("event") != f"{self.kind}_state":
            return False
        return (data.get(self.kind) or {}).get("status") in self.terminal

    def relay(self, request, run_id: str, path: str):
        """The page's event stream: one upstream per run per process, whoever watches."""
        svc = request.service
        channel = Channel(
            key=(self.kind, request.org.pk, svc.project, run_id),
            open=service_stream(svc, path),
            render=self.render(request.org.slug),
            is_terminal=self.is_terminal,
            replay_to_new_viewers=True,
            ended_message=self.ended_message,
        )
        return relay_response(request, channel)
