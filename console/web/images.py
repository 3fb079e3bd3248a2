"""Pictures from the service that the console hands to browsers: checked by their own header first.

A PNG declares its size in its first chunk (IHDR): a few hundred bytes of zlib can declare 100 000 x
100 000 pixels, which every browser shown it tries to decode (a decompression bomb, as the screen relay's
``MAX_SIDE`` guards against for JPEG frames). Screenshots are a viewport's size; more is refused.
"""

from __future__ import annotations

import base64
import binascii
import struct

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
MAX_SIDE = 8192  # pixels a side: an 8K screen


def png_size(data: bytes) -> tuple[int, int] | None:
    """(width, height) of a PNG by its IHDR chunk, or None when ``data`` does not start as one."""
    if len(data) < 24 or not data.startswith(PNG_SIGNATURE) or data[12:16] != b"IHDR":
        return None
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def showable_png(data: bytes) -> bool:
    """Whether ``data`` is a PNG (by its header) of at most ``MAX_SIDE`` pixels a side."""
    size = png_size(data)
    return size is not None and all(0 < side <= MAX_SIDE for side in size)


def showable_png_base64(text: str) -> bool:
    """The same for a base64 PNG (a telemetry screenshot): only its header is decoded."""
    try:
        head = base64.b64decode(text[:44], validate=True)
    except (binascii.Error, ValueError):
        return False
    return showable_png(head)
