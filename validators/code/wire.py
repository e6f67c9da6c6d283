"""The judge's end of the wire to the candidate's process (server.py holds the other end).

Stdlib only; runs in the sandbox's run child. Requests go out as marshal data (the candidate's
process may read them as it likes). Replies come back as JSON, parsed here by the json module and
rebuilt by `decode`, which accepts only the tagged trees of server.encode: exact builtins (None,
bool, int, float, complex, str, bytes, list, tuple, dict, set, frozenset). An object with a rigged
`__eq__`, or a subclass of a builtin, cannot come back; what does is made of fresh builtins.
"""

from __future__ import annotations

import json
import marshal
import os
import select
import time
from typing import Any

HEADER_BYTES = 4
MAX_MESSAGE_BYTES = 32 << 20  # a reply larger than this is refused, not read
MAX_DEPTH = 200
SMALL_INT = 1 << 62  # larger ints travel as hex text (decimal conversion is limited in 3.11)


class WireError(Exception):
    """A value cannot cross, or a message is malformed."""


class PeerTimeout(WireError):
    """The other side did not answer before the deadline."""


class PeerGone(WireError):
    """The other side closed its end (its process ended)."""


def frame(body: bytes) -> bytes:
    """A message on the wire: 4-byte big-endian length, then the body."""
    return len(body).to_bytes(HEADER_BYTES, "big") + body


def request(message: Any) -> bytes:
    """A framed request; ValueError if it holds anything but plain builtins (marshal's rule)."""
    return frame(marshal.dumps(message))


def write(fd: int, data: bytes) -> None:
    """Write all of `data` (the caller ignores SIGPIPE: a dead peer is an OSError here)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def receive(fd: int, deadline: float) -> dict[str, Any]:
    """Read one JSON reply, waiting at most until `deadline` (time.monotonic)."""
    length = int.from_bytes(_read(fd, HEADER_BYTES, deadline), "big")
    if length > MAX_MESSAGE_BYTES:
        raise WireError(f"a message of {length} bytes is over the limit of {MAX_MESSAGE_BYTES}")
    try:
        message = json.loads(_read(fd, length, deadline))
    except (ValueError, RecursionError) as exc:
        raise WireError(f"malformed message: {exc}") from exc
    if type(message) is not dict:
        raise WireError("a message must be a JSON object")
    return message


def _read(fd: int, count: int, deadline: float) -> bytes:
    chunks: list[bytes] = []
    while count:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
            raise PeerTimeout("no answer before the deadline")
        try:
            chunk = os.read(fd, min(count, 1 << 20))
        except OSError as exc:
            raise PeerGone(str(exc)) from exc
        if not chunk:
            raise PeerGone("the connection closed")
        chunks.append(chunk)
        count -= len(chunk)
    return b"".join(chunks)


def decode(tree: Any, depth: int = 0) -> Any:
    """Rebuild a value from server.encode's tree, refusing anything encode cannot produce."""
    if depth > MAX_DEPTH:
        raise WireError("the value is nested too deeply")
    kind = type(tree)
    if tree is None or kind is bool or kind is str or kind is float:
        return tree
    if kind is int:
        if not -SMALL_INT < tree < SMALL_INT:
            raise WireError("a large int was not hex-encoded")
        return tree
    if kind is not list or len(tree) != 2 or type(tree[0]) is not str:
        raise WireError(f"malformed value of JSON type {kind.__name__}")
    tag, body = tree
    if tag == "i" and type(body) is str:
        return int(body, 16)
    if tag == "b" and type(body) is str:
        return body.encode("latin-1")
    if type(body) is not list:
        raise WireError(f"malformed {tag!r} value")
    try:
        if tag == "d":
            return dict(_pair(pair, depth) for pair in body)
        items = [decode(item, depth + 1) for item in body]
        if tag == "l":
            return items
        if tag == "t":
            return tuple(items)
        if tag == "s":
            return set(items)
        if tag == "f":
            return frozenset(items)
        if tag == "c" and len(items) == 2 and all(type(v) is float for v in items):
            return complex(items[0], items[1])
    except TypeError as exc:  # an unhashable element of a set or a dict key
        raise WireError(f"malformed {tag!r} value: {exc}") from exc
    raise WireError(f"unknown value tag {tag!r}")


def _pair(pair: Any, depth: int) -> tuple[Any, Any]:
    if type(pair) is not list or len(pair) != 2:
        raise WireError("malformed dict item")
    return decode(pair[0], depth + 1), decode(pair[1], depth + 1)
