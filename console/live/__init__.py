"""The live relay: service event streams fanned out to browsers (see docs/architecture.md)."""

from console.live.hub import OPENED, Channel, Frame
from console.live.sources import service_stream


def relay_response(request, channel):
    # Imported lazily: the hub module is Django-free, the response module reads settings.
    from console.live.response import relay_response as respond

    return respond(request, channel)


__all__ = ["OPENED", "Channel", "Frame", "relay_response", "service_stream"]
