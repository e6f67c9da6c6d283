"""The candidate's process: loads the program and answers calls to its functions.

Started by the judge (candidate.py) as a fresh interpreter, never a fork of the judge, so the
tests were never in this process's memory, with one socket to the judge. The judge sends this
module's compiled code, so it imports nothing that must be compiled: builtins, os, sys, marshal
(every import here would delay every candidate's start). Requests arrive as marshal data; replies
leave as JSON (written here, parsed strictly by the judge, see wire.py) of tagged trees of exact
builtins. Everything here runs next to untrusted code and may be rewritten by it: nothing it says
is trusted beyond being plain data. The tamper report (`guard`) is advisory: it catches naive
patching of hooks and timers; the defence proper is that the judge lives in another process.
"""

from __future__ import annotations

import builtins
import marshal
import os
import sys

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing would slow every start
if TYPE_CHECKING:
    from typing import Any

PROGRAM = "<program>"
MAX_MESSAGE_BYTES = 32 << 20  # as in wire.py
MAX_DEPTH = 200
SMALL_INT = 1 << 62
MUTABLE = (list, dict, set)
WATCHED = {
    "sys": ("excepthook", "displayhook", "breakpointhook", "exit", "settrace", "setprofile"),
    "os": ("_exit", "kill", "killpg", "abort"),
    "time": ("time", "monotonic", "perf_counter", "process_time", "sleep", "time_ns"),
    "signal": ("signal", "alarm", "setitimer", "pthread_kill", "raise_signal"),
}
ESCAPES = {i: f"\\u{i:04x}" for i in range(32)} | {ord('"'): '\\"', ord("\\"): "\\\\"}


class Unencodable(Exception):
    """A value of a type that does not cross: not a plain builtin nor a known standard value."""

    def __init__(self, value: Any, why: str = "") -> None:
        kind = type(value)
        super().__init__(f"{kind.__module__}.{kind.__qualname__}" + (f" ({why})" if why else ""))
        self.kind, self.value = kind, value


# Standard-library classes whose exact instances cross as data: the judge rebuilds them with its
# own classes (wire.decode), so every comparison in the tests uses the judge's own __eq__.
STANDARD = {
    "collections.Counter": "C",
    "collections.OrderedDict": "O",
    "collections.defaultdict": "D",
    "collections.deque": "Q",
    "decimal.Decimal": "M",
    "fractions.Fraction": "R",
    "datetime.datetime": "T",
    "datetime.date": "T",
    "datetime.time": "T",
    "datetime.timedelta": "T",
}
# defaultdict factories the judge rebuilds; any other (a lambda, the program's own function)
# crosses as None: the dict compares the same, only a missing-key lookup would differ.
FACTORIES = ("list", "dict", "set", "int", "float", "str", "tuple", "frozenset", "bool", "bytes")
STANDARD_FACTORIES = ("collections.Counter", "collections.OrderedDict", "collections.deque")
# Enums of the standard library the judge rebuilds (a member crosses as its class and name).
ENUMS = (
    "http.HTTPStatus", "http.HTTPMethod", "re.RegexFlag", "signal.Signals", "signal.Handlers",
    "socket.AddressFamily", "socket.SocketKind", "uuid.SafeUUID", "inspect._ParameterKind",
)  # fmt: skip
# Methods a named tuple class may not define itself: they would change how it compares.
COMPARING = ("__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__hash__", "__bool__",
             "__len__", "__iter__", "__getitem__", "__contains__")  # fmt: skip
DICT_VIEWS: tuple[type, type] = (type({}.keys()), type({}.items()))


def _dotted(kind: type) -> str:
    return f"{kind.__module__}.{kind.__qualname__}"


def _is_exactly(kind: type, dotted: str) -> bool:
    """`kind` is the standard class named `dotted` (not a subclass, not a look-alike)."""
    module, _, name = dotted.rpartition(".")
    return getattr(sys.modules.get(module), name, None) is kind


def encode(value: Any, depth: int = 0) -> Any:
    """A tree of None/bool/int/float/str/list for `value` (wire.decode's input); exact types."""
    if depth > MAX_DEPTH:
        raise ValueError(f"the value is nested more than {MAX_DEPTH} levels deep")
    kind = type(value)
    if value is None or kind is bool or kind is str or kind is float:
        return value
    if kind is int:
        return value if -SMALL_INT < value < SMALL_INT else ["i", format(value, "x")]
    if kind is list or kind is tuple or kind is set or kind is frozenset:
        tag = "l" if kind is list else "t" if kind is tuple else "s" if kind is set else "f"
        return [tag, [encode(v, depth + 1) for v in value]]
    if kind is dict:
        return ["d", _pairs(value, depth)]
    if kind is bytes or kind is bytearray:
        return ["b" if kind is bytes else "B", value.decode("latin-1")]
    if kind is complex:
        return ["c", [value.real, value.imag]]
    if kind is range:
        return ["r", [encode(value.start), encode(value.stop), encode(value.step)]]
    if kind in DICT_VIEWS:
        items = [list(item) if kind is DICT_VIEWS[1] else [item, None] for item in value]
        return ["K" if kind is DICT_VIEWS[0] else "I", _pairs(items, depth)]
    return _standard(value, kind, depth)


def _pairs(items: Any, depth: int) -> list[Any]:
    pairs = items.items() if hasattr(items, "items") else items
    return [[encode(k, depth + 1), encode(v, depth + 1)] for k, v in pairs]


def _standard(value: Any, kind: type, depth: int) -> Any:
    """A standard-library value by its tag, rebuilt by the judge; Unencodable otherwise."""
    dotted = _dotted(kind)
    tag = STANDARD.get(dotted)
    if tag is not None and _is_exactly(kind, dotted):
        if tag in "CO":
            return [tag, _pairs(value, depth)]
        if tag == "D":
            return [tag, [_factory(value.default_factory), _pairs(value, depth)]]
        if tag == "Q":
            return [tag, [value.maxlen, [encode(v, depth + 1) for v in value]]]
        if tag == "M":
            return [tag, str(value)]
        if tag == "R":
            return [tag, [encode(value.numerator), encode(value.denominator)]]
        if kind.__qualname__ == "timedelta":
            return [tag, ["timedelta", [value.days, value.seconds, value.microseconds]]]
        return [tag, [kind.__qualname__, value.isoformat()]]
    if dotted in ENUMS and _is_exactly(kind, dotted):
        return ["E", [dotted, value.name]]
    if isinstance(value, tuple) and type(getattr(kind, "_fields", None)) is tuple:
        return _named_tuple(value, kind, depth)
    raise Unencodable(value)


def _factory(factory: Any) -> str | None:
    if factory is None:
        return None
    name = getattr(factory, "__name__", "")
    if name in FACTORIES and getattr(builtins, name) is factory:
        return name
    for dotted in STANDARD_FACTORIES:
        if _is_exactly(factory, dotted):
            return dotted
    return None


def _named_tuple(value: Any, kind: type, depth: int) -> Any:
    own = sorted({m for k in kind.__mro__[:-2] for m in COMPARING if m in vars(k)})
    if kind.__mro__[-2:] != (tuple, object) or own:
        raise Unencodable(value, ("a named tuple that defines " + ", ".join(own)) if own else "")
    fields: tuple[str, ...] = value._fields
    return ["N", [kind.__name__, list(fields), [encode(v, depth + 1) for v in value]]]


def _json(tree: Any, out: list[str]) -> None:
    """JSON text of a tree or message (the json module would cost its import at every start)."""
    if tree is None or tree is True or tree is False:
        out.append("null" if tree is None else "true" if tree else "false")
    elif type(tree) is int:
        out.append(str(tree))
    elif type(tree) is float:
        special = tree != tree or tree in (float("inf"), float("-inf"))
        out.append(("NaN" if tree != tree else "Infinity" if tree > 0 else "-Infinity")
                   if special else repr(tree))  # fmt: skip
    elif type(tree) is str:
        out.append('"' + tree.translate(ESCAPES) + '"')
    elif type(tree) is list:
        out.append("[")
        for index, item in enumerate(tree):
            out.append("," if index else "")
            _json(item, out)
        out.append("]")
    elif type(tree) is dict:
        out.append("{")
        for index, (key, item) in enumerate(tree.items()):
            out.append(("," if index else "") + '"' + str(key).translate(ESCAPES) + '":')
            _json(item, out)
        out.append("}")
    else:
        raise Unencodable(tree)


def dumps(message: dict[str, Any]) -> bytes:
    """One framed JSON message; lone surrogates become \\uXXXX escapes."""
    out: list[str] = []
    _json(message, out)
    body = "".join(out).encode("utf-8", "backslashreplace")
    return len(body).to_bytes(4, "big") + body


def send(fd: int, message: dict[str, Any]) -> None:
    """Write one message to the judge."""
    view = memoryview(dumps(message))
    while view:
        view = view[os.write(fd, view) :]


def receive(fd: int) -> Any:
    """Read one request (marshal data from the judge); None when the judge closed the socket."""
    header = _read(fd, 4)
    return (
        None if header is None else marshal.loads(_read(fd, int.from_bytes(header, "big")) or b"")
    )


def _read(fd: int, count: int) -> bytes | None:
    data = b""
    while len(data) < count:
        chunk = os.read(fd, count - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def _snapshot() -> dict[str, Any]:
    found: dict[str, Any] = {f"builtins.{k}": v for k, v in vars(builtins).items()}
    for module_name, names in WATCHED.items():
        module = __import__(module_name)
        for name in names:
            found[f"{module_name}.{name}"] = getattr(module, name, None)
    return found


def _tampering(before: dict[str, Any], atexit_count: int) -> list[str]:
    """What the program did to hooks, builtins and timers, e.g. "replaced time.time" (advisory)."""
    now = _snapshot()
    changed = [f"replaced {name}" for name, value in before.items() if now.get(name) is not value]
    if sys.gettrace() is not None or sys.getprofile() is not None:
        changed.append("installed a tracer (sys.settrace or sys.setprofile)")
    atexit = sys.modules.get("atexit")
    if atexit is not None and atexit._ncallbacks() > atexit_count:
        changed.append("registered an exit handler (atexit)")
    case = sys.modules.get("unittest.case")
    test_case = getattr(case, "TestCase", None)
    for name in dir(test_case) if test_case is not None else ():
        method = getattr(test_case, name, None)
        if name.startswith("assert") and getattr(method, "__module__", "") != "unittest.case":
            changed.append(f"replaced unittest.TestCase.{name}")
    return changed


def _program_line(exc: BaseException) -> int | None:
    if isinstance(exc, SyntaxError) and exc.filename == PROGRAM:
        return exc.lineno
    line, frame = None, exc.__traceback__
    while frame is not None:
        if frame.tb_frame.f_code.co_filename == PROGRAM:
            line = frame.tb_lineno
        frame = frame.tb_next
    return line


def _describe(exc: BaseException) -> dict[str, Any]:
    try:
        text = str(exc)
    except BaseException:
        text = ""
    kinds = [k.__name__ for k in type(exc).__mro__ if k.__module__ == "builtins"]
    return {
        "type": type(exc).__qualname__,
        "builtin_types": kinds,
        "message": text[:2000] if type(text) is str else "",
        "line": _program_line(exc),
    }


def _exit_code(exc: BaseException) -> str:
    return repr(getattr(exc, "code", None)) if isinstance(exc, SystemExit) else type(exc).__name__


class _Stranger:
    """A fresh object nothing can honestly be equal to."""


def _always_equal(value: Any) -> bool:
    """The value claims to equal a stranger: the mark of a reward hack, not of a rare type."""
    try:
        stranger = _Stranger()
        return bool(value == stranger) or not bool(value != stranger)
    except BaseException:
        return False


def _value_reply(result: Any, args: tuple[Any, ...]) -> dict[str, Any]:
    try:
        if type(result).__module__ == "numpy" and hasattr(result, "tolist"):
            result = result.tolist()  # numpy scalars and arrays; checked like any other result
        reply = {
            "value": encode(result),
            "args": {str(i): encode(a) for i, a in enumerate(args) if type(a) in MUTABLE},
        }
        size = len(dumps(reply))
    except Unencodable as exc:
        return {
            "bad_value": str(exc),
            "always_equal": _always_equal(exc.value),
            "own_class": getattr(exc.kind, "__module__", "") == "solution",
        }
    except Exception as exc:  # too deep, or a conversion that raised
        return {"bad_value": f"value that cannot be sent ({exc!r:.200})", "always_equal": False}
    return {"too_large": True} if size > MAX_MESSAGE_BYTES else reply


def _call(module: Any, request: Any) -> dict[str, Any]:
    name, args, kwargs = request
    function = vars(module).get(name)
    if not callable(function):
        return {"missing": str(name)}
    try:
        result = function(*args, **kwargs)
    except (SystemExit, KeyboardInterrupt, GeneratorExit) as exc:
        return {"exit": _exit_code(exc), "error": _describe(exc)}
    except BaseException as exc:
        return {"raised": _describe(exc)}
    return _value_reply(result, args)


def serve(fd: int) -> None:
    """Load the program sent on socket `fd`, then answer calls until the socket closes."""
    source = receive(fd)
    module = type(sys)("solution")
    module.__file__ = PROGRAM
    sys.modules["solution"] = module
    atexit_count = sys.modules["atexit"]._ncallbacks() if "atexit" in sys.modules else 0
    before = _snapshot()
    try:
        exec(compile(str(source), PROGRAM, "exec"), module.__dict__)
    except (SystemExit, KeyboardInterrupt) as exc:
        send(fd, {"load": "exit", "code": _exit_code(exc), "error": _describe(exc)})
        os._exit(0)
    except BaseException as exc:
        send(fd, {"load": "error", "error": _describe(exc)})
        os._exit(0)
    functions = [
        name
        for name, value in vars(module).items()
        if callable(value) and not isinstance(value, type) and not name.startswith("__")
    ]
    reported = _tampering(before, atexit_count)
    send(fd, {"load": "ok", "functions": functions, "guard": reported})
    while True:
        request = receive(fd)
        if request is None:
            os._exit(0)  # the judge closed the connection: the run is over
        reply = _call(module, request)
        guard = [g for g in _tampering(before, atexit_count) if g not in reported]
        reported += guard
        send(fd, {**reply, "guard": guard})
        if "exit" in reply:
            os._exit(0)  # the program asked to exit; the judge starts a fresh one if needed
