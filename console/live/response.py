"""The Django side of the relay: a text/event-stream response for one viewer of a channel."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse

from console.live.guard import access_ended_html, stream_response
from console.live.hub import Channel, Frame, Hub, encode, viewer_stream


def timings() -> dict:
    """The hub's liveness timings from the settings (read at each stream, so a changed setting applies)."""
    keepalive = getattr(settings, "LIVE_KEEPALIVE_SECONDS", 5.0)
    return {
        "stall_after": 2 * getattr(settings, "LIVE_UPSTREAM_KEEPALIVE_SECONDS", 15.0),
        # Told "stalled" within two of the relay's keepalive intervals of upstream silence when the service
        # does not answer either: probed after one interval, given half of one to answer.
        "probe_after": keepalive,
        "probe_timeout": keepalive / 2,
    }


hub = Hub(
    buffer_size=getattr(settings, "LIVE_BUFFER_SIZE", 2000),
    max_pending=getattr(settings, "LIVE_MAX_PENDING", 5000),
    buffer_bytes=getattr(settings, "LIVE_BUFFER_BYTES", 16 * 1024 * 1024),
    max_pending_bytes=getattr(settings, "LIVE_MAX_PENDING_BYTES", 64 * 1024 * 1024),
    linger_seconds=getattr(settings, "LIVE_LINGER_SECONDS", 30.0),
    **timings(),
)


def relay_response(request: HttpRequest, channel: Channel) -> HttpResponse:
    """Subscribe this request to the channel and stream its frames (never compressed, never buffered).

    A browser reconnecting to a stream that has already ended gets 204, which tells EventSource to stop.
    """
    last_event_id = request.headers.get("Last-Event-ID") or request.GET.get("last_event_id")
    existing = hub.broadcasts.get(channel.key)
    if existing is not None and existing.ended and last_event_id is not None and not existing.viewers:
        return HttpResponse(status=204)
    vars(hub).update(timings())
    broadcast, viewer = hub.subscribe(channel, last_event_id)
    keepalive = getattr(settings, "LIVE_KEEPALIVE_SECONDS", 5.0)
    # Once the member lost access (console.live.guard): the pane shows "ended", as at the resource's end,
    # with a link to sign in again, in its status chip and where its "ended" event lands.
    ended = access_ended_html(request)
    chip = (
        '<span class="live-status live-status--ended" data-state="ended">Ended</span> '
        f'<span class="live-status__message">{ended}</span>'
    )
    final = encode(Frame(html=chip, event="status"), None) + encode(Frame(html=ended, event="ended"), None)
    return stream_response(request, viewer_stream(broadcast, viewer, keepalive), final=final)
