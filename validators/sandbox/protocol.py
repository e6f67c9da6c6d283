"""Length-prefixed JSON messages over pipes: the only way data crosses the sandbox boundary.

Stdlib only: this module is imported on both sides of the boundary.
"""

from __future__ import annotations

import base64
import json
import os
import struct
from typing import Any

HEADER = struct.Struct(">I")
MAX_MESSAGE_BYTES = 1 << 30


class ProtocolError(Exception):
    """A message was malformed, truncated or too large."""


def encode(message: dict[str, Any]) -> bytes:
    """Serialise one message to its framed bytes."""
    body = json.dumps(message, allow_nan=True, separators=(",", ":")).encode()
    return HEADER.pack(len(body)) + body


def write_message(fd: int, message: dict[str, Any]) -> None:
    """Write one framed message to a file descriptor, retrying short writes."""
    view = memoryview(encode(message))
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _read_exact(fd: int, count: int) -> bytes | None:
    chunks: list[bytes] = []
    remaining = count
    while remaining:
        chunk = os.read(fd, min(remaining, 1 << 20))
        if not chunk:
            if remaining == count:
                return None
            raise ProtocolError(f"stream ended {remaining} bytes short of a message")
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def read_message(fd: int, limit: int = MAX_MESSAGE_BYTES) -> dict[str, Any] | None:
    """Read one framed message; None at a clean end of stream."""
    header = _read_exact(fd, HEADER.size)
    if header is None:
        return None
    (length,) = HEADER.unpack(header)
    if length > limit:
        raise ProtocolError(f"message of {length} bytes exceeds the limit of {limit}")
    body = _read_exact(fd, length) if length else b""
    if body is None:
        raise ProtocolError("stream ended inside a message")
    return decode_body(body)


def decode_body(body: bytes) -> dict[str, Any]:
    """Parse a message body, insisting on a JSON object."""
    try:
        message = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ProtocolError(f"message is not JSON: {exc}") from exc
    if not isinstance(message, dict):
        raise ProtocolError("message is not a JSON object")
    return message


def pack_bytes(data: bytes) -> str:
    """Binary data (e.g. a float32 vertex buffer) as text that fits in a message."""
    return base64.b64encode(data).decode("ascii")


def unpack_bytes(text: str) -> bytes:
    """Inverse of pack_bytes."""
    return base64.b64decode(text.encode("ascii"), validate=True)
