"""The wire between judge and candidate: what server.py writes, wire.py rebuilds exactly."""

from __future__ import annotations

import collections
import datetime
import decimal
import fractions
import http
import math
import os
import socket
import time
from typing import Any

import pytest

from validators.code import server, wire

VALUES: list[Any] = [
    None, True, False, 0, -1, 2**62 - 1, 2**62, -(2**200), 10**5000, 0.1, -0.0, 1e300,
    math.inf, -math.inf, "", "plain", 'quote " back \\ slash', "\x00\x1f\x7f tab\t nl\n",
    "é ünïcødé 😀", "lone \udc80 surrogate", b"", bytes(range(256)), 3 - 4j,
    [], [1, [2, [3]]], (), (1, "a"), {1, 2}, frozenset({(1, 2)}), {}, {"a": 1, 2: [3], (4,): {5}},
    [{"nested": ({"deep": frozenset({b"x"})},)}],
]  # fmt: skip


def round_trip(value: Any) -> Any:
    body = server.dumps({"value": server.encode(value)})
    read, write = socket.socketpair()
    try:
        wire.write(write.fileno(), body)
        message = wire.receive(read.fileno(), time.monotonic() + 5)
    finally:
        read.close()
        write.close()
    return wire.decode(message["value"])


@pytest.mark.parametrize(
    "value", VALUES, ids=[f"{type(v).__name__}-{i}" for i, v in enumerate(VALUES)]
)
def test_plain_values_round_trip_with_their_exact_types(value: Any) -> None:
    back = round_trip(value)
    assert back == value and type(back) is type(value)
    if isinstance(value, float):
        assert math.copysign(1, back) == math.copysign(1, value)


Point = collections.namedtuple("Point", "x y")
STANDARD: list[Any] = [
    collections.Counter("hello"), collections.OrderedDict([(2, 1), (1, 2)]),
    collections.defaultdict(list, {1: [2]}), collections.deque([1, 2], 5), Point(1, 2),
    decimal.Decimal("1.10"), fractions.Fraction(3, 4), datetime.datetime(2024, 1, 2, 3, 4, 5, 6),
    datetime.datetime(2024, 1, 2, tzinfo=datetime.timezone(datetime.timedelta(hours=2))),
    datetime.date(2020, 2, 29), datetime.time(1, 2, 3), datetime.timedelta(days=-1, seconds=5),
    bytearray(b"ab"), range(1, 10, 2), http.HTTPStatus.OK, {1: 2}.keys(), {1: 2}.items(),
    {Point(1, 2): [collections.Counter(a=1)]},
]  # fmt: skip


@pytest.mark.parametrize("value", STANDARD, ids=[type(v).__name__ for v in STANDARD])
def test_standard_library_values_are_rebuilt_with_the_judges_classes(value: Any) -> None:
    back = round_trip(value)
    assert back == value and type(back).__name__ == type(value).__name__
    if isinstance(value, collections.OrderedDict | collections.Counter):
        assert list(back.items()) == list(value.items())  # order kept


def test_a_defaultdict_keeps_a_standard_factory_and_drops_any_other() -> None:
    assert round_trip(collections.defaultdict(int)).default_factory is int
    assert round_trip(collections.defaultdict(lambda: 0, {1: 2})).default_factory is None


def test_nan_round_trips() -> None:
    assert math.isnan(round_trip(math.nan))


class OwnCounter(collections.Counter):  # a subclass is not the standard class
    pass


class Rigged(int):
    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = int.__hash__


@pytest.mark.parametrize(
    "value", [Rigged(1), [Rigged(1)], {"k": object()}, {Rigged(1): 1}, iter([1]), OwnCounter("a")]
)
def test_anything_but_exact_builtins_is_refused_by_the_sender(value: Any) -> None:
    with pytest.raises(server.Unencodable):
        server.encode(value)


@pytest.mark.parametrize(
    "tree",
    [["x", []], ["l"], ["l", 1], {"a": 1}, ["d", [[1]]], ["s", [["l", []]]], 2**70,
     ["c", [1, 2]], ["i", 5], ["D", ["os.system", []]], ["E", ["os.environ", "PATH"]],
     ["E", ["http.HTTPStatus", "NO_SUCH"]], ["N", ["1bad", ["x"], [1]]], ["N", ["P", ["x"], []]],
     ["T", ["datetime", "yesterday"]], ["T", ["timedelta", [1, 2]]], ["R", [1, 0]],
     ["M", "not a number"], ["r", [0, 1, 0]], ["Q", ["5", []]], ["C", [[["l", []], 1]]]],
)  # fmt: skip
def test_the_judge_refuses_a_malformed_tree(tree: Any) -> None:
    with pytest.raises(wire.WireError):
        wire.decode(tree)


def test_the_judge_refuses_oversized_and_malformed_messages() -> None:
    read, write = socket.socketpair()
    try:
        wire.write(write.fileno(), (wire.MAX_MESSAGE_BYTES + 1).to_bytes(4, "big"))
        with pytest.raises(wire.WireError, match="over the limit"):
            wire.receive(read.fileno(), time.monotonic() + 5)
        wire.write(write.fileno(), wire.frame(b"[1, 2]"))
        with pytest.raises(wire.WireError, match="JSON object"):
            wire.receive(read.fileno(), time.monotonic() + 5)
        with pytest.raises(wire.PeerTimeout):
            wire.receive(read.fileno(), time.monotonic() + 0.05)
        write.close()
        with pytest.raises(wire.PeerGone):
            wire.receive(read.fileno(), time.monotonic() + 5)
    finally:
        read.close()
        write.close()


def test_requests_carry_plain_data_only() -> None:
    assert wire.request(("f", (1, [2]), {"k": {3}}))
    with pytest.raises(ValueError):
        wire.request(("f", (Rigged(1),), {}))
    read, write = os.pipe()
    os.close(read)
    with pytest.raises(OSError):  # SIGPIPE is ignored by Python itself, so EPIPE here
        wire.write(write, b"x")
    os.close(write)


def test_both_ends_agree_on_the_limits() -> None:
    assert (server.MAX_MESSAGE_BYTES, server.MAX_DEPTH, server.SMALL_INT) == (
        wire.MAX_MESSAGE_BYTES,
        wire.MAX_DEPTH,
        wire.SMALL_INT,
    )
