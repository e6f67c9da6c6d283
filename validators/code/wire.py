"""The judge's end of the wire to the candidate's process (server.py holds the other end).

Stdlib only; runs in the sandbox's run child. Requests go out as marshal data (the candidate's
process may read them as it likes). Replies come back as JSON, parsed here by the json module and
rebuilt by `decode`, which accepts only the tagged trees of server.encode: exact builtins (None,
bool, int, float, complex, str, bytes, bytearray, range, list, tuple, dict, set, frozenset, dict
key and item views) and the standard library's everyday values (Counter, OrderedDict,
defaultdict, deque, named tuples, Decimal, Fraction, datetime/date/time/timedelta, members of
standard enums). Each is rebuilt here with the judge's own classes from plain data, so the tests
compare with the judge's `__eq__`: an object with a rigged `__eq__`, or a subclass the program
defined, cannot come back.
"""

from __future__ import annotations

import collections
import datetime
import decimal
import fractions
import functools
import importlib
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
MAX_FIELDS = 255
# defaultdict factories rebuilt as such (server.FACTORIES); any other crosses as None.
FACTORIES: dict[str, Any] = {
    "list": list, "dict": dict, "set": set, "int": int, "float": float, "str": str,
    "tuple": tuple, "frozenset": frozenset, "bool": bool, "bytes": bytes,
    "collections.Counter": collections.Counter, "collections.OrderedDict": collections.OrderedDict,
    "collections.deque": collections.deque,
}  # fmt: skip
ENUMS = frozenset(
    ("http.HTTPStatus", "http.HTTPMethod", "re.RegexFlag", "signal.Signals", "signal.Handlers",
     "socket.AddressFamily", "socket.SocketKind", "uuid.SafeUUID", "inspect._ParameterKind")
)  # fmt: skip
TIMES: dict[str, Any] = {
    "datetime": datetime.datetime.fromisoformat,
    "date": datetime.date.fromisoformat,
    "time": datetime.time.fromisoformat,
}


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
    if tag in ("b", "B") and type(body) is str:
        return body.encode("latin-1") if tag == "b" else bytearray(body.encode("latin-1"))
    if tag == "M" and type(body) is str:
        return _build(decimal.Decimal, body)
    if type(body) is not list:
        raise WireError(f"malformed {tag!r} value")
    try:
        return _container(tag, body, depth)
    except TypeError as exc:  # an unhashable element of a set or a dict key, a wrong shape
        raise WireError(f"malformed {tag!r} value: {exc}") from exc


def _container(tag: str, body: list[Any], depth: int) -> Any:
    if tag in ("d", "C", "O", "K", "I"):
        pairs = [_pair(pair, depth) for pair in body]
        plain = dict(pairs)
        if tag in ("d", "K", "I"):
            return plain if tag == "d" else plain.keys() if tag == "K" else plain.items()
        # Counter(pairs) would count the pairs themselves: build it from the mapping.
        return collections.Counter(plain) if tag == "C" else collections.OrderedDict(pairs)
    if tag in ("D", "Q", "T", "E", "N", "R", "r"):
        return _standard(tag, body, depth)
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
    raise WireError(f"unknown value tag {tag!r}")


def _standard(tag: str, body: list[Any], depth: int) -> Any:
    """The standard-library values (server._standard), built with the judge's own classes."""
    if len(body) not in (2, 3):
        raise WireError(f"malformed {tag!r} value")
    first, second = body[0], body[1]
    if tag == "D" and (first is None or first in FACTORIES) and type(second) is list:
        return collections.defaultdict(FACTORIES.get(first), [_pair(p, depth) for p in second])
    if tag == "Q" and (first is None or type(first) is int) and type(second) is list:
        return collections.deque([decode(v, depth + 1) for v in second], first)
    if tag == "R":
        numerator, denominator = decode(first, depth + 1), decode(second, depth + 1)
        if type(numerator) is int and type(denominator) is int:
            return _build(fractions.Fraction, numerator, denominator)
    if tag == "r":
        bounds = [decode(v, depth + 1) for v in body]
        if len(bounds) == 3 and all(type(v) is int for v in bounds):
            return _build(range, *bounds)
    if tag == "T" and first == "timedelta" and _ints(second, 3):
        return _build(datetime.timedelta, *second)
    if tag == "T" and first in TIMES and type(second) is str:
        return _build(TIMES[first], second)
    if tag == "E" and first in ENUMS and type(second) is str:
        module, _, name = first.rpartition(".")
        members = getattr(importlib.import_module(module), name).__members__
        if second in members:
            return members[second]
    if tag == "N" and len(body) == 3 and type(body[2]) is list:
        return _named_tuple(first, second, [decode(v, depth + 1) for v in body[2]])
    raise WireError(f"malformed {tag!r} value")


def _ints(value: Any, count: int) -> bool:
    return type(value) is list and len(value) == count and all(type(v) is int for v in value)


def _build(make: Any, *args: Any) -> Any:
    try:
        return make(*args)
    except (ValueError, ArithmeticError, OverflowError, decimal.InvalidOperation) as exc:
        raise WireError(f"a value that cannot be rebuilt: {exc}") from exc


def _named_tuple(name: Any, fields: Any, items: list[Any]) -> Any:
    if type(name) is not str or type(fields) is not list or len(fields) != len(items):
        raise WireError("malformed named tuple")
    if len(fields) > MAX_FIELDS or not all(type(f) is str for f in fields):
        raise WireError("malformed named tuple fields")
    return _build(_named_tuple_class(name, tuple(fields)), *items)


@functools.lru_cache(maxsize=256)
def _named_tuple_class(name: str, fields: tuple[str, ...]) -> Any:
    """collections.namedtuple of that name and those fields (a ValueError for bad names)."""
    try:
        return collections.namedtuple(name, fields)
    except (ValueError, TypeError) as exc:
        raise WireError(f"malformed named tuple: {exc}") from exc


def _pair(pair: Any, depth: int) -> tuple[Any, Any]:
    if type(pair) is not list or len(pair) != 2:
        raise WireError("malformed dict item")
    return decode(pair[0], depth + 1), decode(pair[1], depth + 1)
