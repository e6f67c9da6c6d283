"""The candidate's process as seen from the judge: started on demand, called through a socket.

Stdlib only; runs in the sandbox's run child (see guest.py). Every failure of the process to
answer with plain data raises CandidateFailure, a BaseException that test code does not catch by
accident, and marks the current test as poisoned: it cannot pass whatever the test does next.
"""

from __future__ import annotations

import builtins
import os
import signal
import socket
import sys
import time
from pathlib import Path
from typing import Any

from validators.code import wire

START_ALLOWANCE_S = 2.0  # interpreter start of the candidate's process, on top of a test's time
MAX_EVENTS = 50
# The candidate's process runs server.py, compiled once here (in the warm worker) and sent over
# its socket: it then has nothing of ours to compile or import at start (no .pyc in the sandbox).
SERVER_FILE = Path(__file__).with_name("server.py")
SERVER_CODE = compile(SERVER_FILE.read_text(), str(SERVER_FILE), "exec")
BOOT = """\
import marshal, os, sys
sys.path[:] = {path!r}
fd = int(sys.argv[1])
def _read(count):
    data = b""
    while len(data) < count:
        chunk = os.read(fd, count - len(data))
        if not chunk:
            os._exit(70)
        data += chunk
    return data
server = {{"__name__": "gs_server", "__builtins__": __builtins__}}
exec(marshal.loads(_read(int.from_bytes(_read(4), "big"))), server)
server["serve"](fd)
"""
# Exit codes of a program that asked to end "successfully" (or interrupted itself) mid-run.
EXIT_HACKS = ("0", "None", "False", "KeyboardInterrupt")


class CandidateFailure(BaseException):  # not an Exception: test code does not catch it
    """The candidate's process died, hung, or answered with something other than plain data."""

    def __init__(self, message: str, kind: str = "failure") -> None:
        super().__init__(message)
        self.kind = kind


class Candidate:
    """The candidate's process, started on demand, and calls to its functions."""

    def __init__(self, source: str, entry_point: str, events: list[dict[str, Any]]) -> None:
        self.source, self.entry_point, self.events = source, entry_point, events
        self.sock: socket.socket | None = None
        self.pid = 0
        self.starts = 0
        self.functions: list[str] = []
        self.load_error: dict[str, Any] | None = None
        self.loaded = False  # the program loaded at least once (a later restart may still fail)
        self.deadline = 0.0  # of the current call (set by the judge per test)
        self.allowed_s = 0.0  # how long the current test had, for messages
        self.budget_end = float("inf")  # of the whole run: loading may not go past it
        self.poisoned = ""  # why the current test cannot pass, once the process failed in it
        self.test = "load"

    def event(self, kind: str, message: str, hack: bool = False) -> None:
        """Record something the judge observed about the candidate."""
        entry = {"kind": kind, "message": message[:500], "hack": hack, "test": self.test}
        if len(self.events) < MAX_EVENTS and all(
            (e["kind"], e["message"]) != (kind, entry["message"]) for e in self.events
        ):
            self.events.append(entry)

    def start(self) -> None:
        """Start a fresh interpreter with the program; on failure, remember why for good."""
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        boot = BOOT.format(path=list(sys.path))
        try:
            os.set_inheritable(child.fileno(), True)
            argv = [sys.executable, "-I", "-S", "-B", "-c", boot, str(child.fileno())]
            devnull = (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0)
            self.pid = os.posix_spawn(
                sys.executable, argv, dict(os.environ), file_actions=[devnull], setsid=True
            )
        except OSError as exc:
            parent.close()
            self._fail_load("spawn", f"the program's process could not start: {exc}")
            return
        finally:
            child.close()
        self.sock, self.starts = parent, self.starts + 1
        try:
            wire.write(parent.fileno(), wire.request(SERVER_CODE) + wire.request(self.source))
            deadline = min(self.deadline + START_ALLOWANCE_S, self.budget_end)
            reply = wire.receive(parent.fileno(), deadline)
        except wire.PeerTimeout:
            self.kill()
            self._fail_load("timeout", "the program did not finish loading in time")
            return
        except (wire.PeerGone, OSError):
            self._fail_load(*self._death("while loading"))
            return
        except Exception:  # malformed, or too big to rebuild here
            self._fail_load("protocol", "the program's process sent a malformed message")
            return
        except BaseException:  # the timer fired during a restart: leave no half-started process
            self.kill()
            raise
        self._guard(reply.get("guard"))
        if reply.get("load") not in ("ok", "error", "exit"):
            self._fail_load("protocol", "the program's process sent something else than its load")
            return
        error: dict[str, Any] = reply["error"] if isinstance(reply.get("error"), dict) else {}
        functions = reply.get("functions")
        functions = [str(n) for n in functions] if isinstance(functions, list) else []
        if reply.get("load") == "exit":
            code = str(reply.get("code"))
            message = f"the program called exit({code}) while loading"
            self._fail_load("exit", message, code, line=error)
        elif reply.get("load") == "error":
            kind = "syntax" if error.get("type") == "SyntaxError" else "exception"
            message = f"{error.get('type')}: {error.get('message')}"
            self._fail_load(kind, f"the program failed while loading: {message}", line=error)
        elif self.entry_point not in functions:
            message = f"the program does not define a function named `{self.entry_point}`"
            self._fail_load("missing_entry_point", message)
        else:
            self.functions, self.loaded = functions, True

    def _fail_load(self, kind: str, message: str, code: str = "", line: Any = None) -> None:
        self.kill()
        hack = kind == "protocol" or (kind == "exit" and code in EXIT_HACKS)
        number = line.get("line") if isinstance(line, dict) else None
        self.load_error = {"kind": kind, "message": message[:2000], "line": number}
        self.event(kind, message, hack)

    def _death(self, when: str) -> tuple[str, str, str]:
        status = self.kill(grace_s=0.5)
        if status is not None and os.WIFEXITED(status):
            code = str(os.WEXITSTATUS(status))
            return "exit", f"the program's process exited with status {code} {when}", code
        if status is not None and os.WIFSIGNALED(status):
            name = signal.Signals(os.WTERMSIG(status)).name
            return "killed", f"the program's process was killed by {name} {when}", ""
        return "protocol", f"the program's process closed its connection {when}", ""

    def _guard(self, report: Any) -> None:
        for name in report if isinstance(report, list) else []:
            self.event("patched", f"the program {str(name)[:200]}", hack=True)

    def call(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Call a function of the program with plain-data arguments; see the module docstring."""
        if self.sock is None and self.load_error is None:
            self.start()
        if self.load_error is not None or self.sock is None:
            error = self.load_error or {}
            raise self._fail(str(error.get("message")), str(error.get("kind")))
        try:
            request = wire.request((name, args, kwargs))
        except ValueError as exc:
            raise self._fail(f"the test passed a value that is not plain data: {exc}") from None
        try:
            wire.write(self.sock.fileno(), request)
            reply = wire.receive(self.sock.fileno(), self.deadline)
            value = wire.decode(reply["value"]) if "value" in reply else None
            changed = reply.get("args") if "value" in reply else None
            mutated = {int(k): wire.decode(v) for k, v in (changed or {}).items()}
        except wire.PeerTimeout:
            self.kill()
            message = f"`{name}` did not return within the {self.allowed_s:.3g} s this test had"
            self.event("timeout", message)
            raise self._fail(message, "timeout") from None
        except (wire.PeerGone, OSError):
            kind, message, code = self._death(f"during a call to `{name}`")
            self.event(kind, message, hack=kind == "exit" and code == "0")
            raise self._fail(message) from None
        except Exception as exc:  # a malformed reply, or one too big to rebuild here
            self.kill()
            forged = isinstance(exc, wire.WireError | KeyError | ValueError | AttributeError)
            self.event("protocol", f"the program's process sent a bad reply ({exc!r})", forged)
            raise self._fail("the program's process sent a malformed reply") from None
        except BaseException:  # the timer fired mid-read: the connection is out of step
            self.kill()
            raise
        self._guard(reply.get("guard"))
        if "value" in reply:
            self._write_back(args, mutated)
            return value
        raise self._failure(name, reply)

    def _fail(self, message: str, kind: str = "failure") -> CandidateFailure:
        """The exception for a failure of the process; the current test can no longer pass."""
        self.poisoned = message
        return CandidateFailure(message, kind)

    def _write_back(self, args: tuple[Any, ...], mutated: dict[int, Any]) -> None:
        """Mutations of list/dict/set arguments, as if the call had been in-process."""
        for index, new in mutated.items():
            if not 0 <= index < len(args):
                continue
            target = args[index]
            if type(target) is list and type(new) is list:
                target[:] = new
            elif type(target) in (dict, set) and type(new) is type(target):
                target.clear()
                target.update(new)

    def _failure(self, name: str, reply: dict[str, Any]) -> BaseException:
        info = reply.get("raised")
        if isinstance(info, dict):
            for kind_name in info.get("builtin_types") or []:
                kind = getattr(builtins, str(kind_name), None)
                if isinstance(kind, type) and issubclass(kind, Exception):
                    try:
                        exc = kind(str(info.get("message", "")))
                    except Exception:
                        continue
                    exc.gs_candidate = info  # type: ignore[attr-defined]
                    return exc
        if "exit" in reply:
            code = str(reply["exit"])
            self.kill()
            message = f"the program called exit({code}) during a call to `{name}`"
            self.event("exit", message, hack=code in EXIT_HACKS)
            return self._fail(message)
        if "bad_value" in reply:
            message = _bad_value_message(name, reply)
            # Failing to cross is a failure, not cheating; claiming to equal anything is cheating.
            self.event("bad_value", message, hack=reply.get("always_equal") is True)
            return self._fail(message)
        if reply.get("too_large"):
            return self._fail(f"`{name}` returned a value over {wire.MAX_MESSAGE_BYTES} bytes")
        if "missing" in reply:
            return self._fail(f"the program has no function named `{name}`")
        if "protocol" in reply:  # our request did not decode there: not the program's doing
            return self._fail(f"the call to `{name}` could not be delivered")
        self.kill()
        self.event("protocol", "the program's process sent an unexpected reply", hack=True)
        return self._fail("the program's process sent an unexpected reply")

    def kill(self, grace_s: float = 0.0) -> int | None:
        """End the process (after `grace_s` for it to end by itself); its wait status."""
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        if not self.pid:
            return None
        pid, self.pid, status = self.pid, 0, None
        end = time.monotonic() + grace_s
        while status is None:
            try:
                done, code = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                return None
            if done:
                status = code
            elif time.monotonic() >= end:
                for kill in (os.killpg, os.kill):
                    try:
                        kill(pid, signal.SIGKILL)
                    except OSError:
                        pass
                status = os.waitpid(pid, 0)[1]
            else:
                time.sleep(0.005)
        return status


CROSSING = (
    "plain data (None, bool, int, float, complex, str, bytes, list, tuple, dict, set) or a "
    "standard-library value (Counter, OrderedDict, defaultdict, deque, a named tuple, Decimal, "
    "Fraction, datetime, date, time, timedelta, range, bytearray)"
)


def _bad_value_message(name: str, reply: dict[str, Any]) -> str:
    """Why a returned value could not reach the tests, and what to return instead."""
    what = str(reply["bad_value"])[:200]
    if reply.get("always_equal") is True:
        return f"`{name}` returned a {what} that claims to equal anything: a reward hack"
    if reply.get("own_class") is True:
        return (
            f"`{name}` returned a {what}, a class the program defines; results reach the tests "
            f"as {CROSSING}"
        )
    return f"`{name}` returned a {what}, which cannot reach the tests; return {CROSSING}"


class Remote:
    """Stands for one function of the program in the tests' namespace."""

    def __init__(self, candidate: Candidate, name: str) -> None:
        self._candidate, self._name = candidate, name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._candidate.call(self._name, args, kwargs)

    def __repr__(self) -> str:
        return f"<function {self._name} of the program>"
