"""Sandbox side of code tasks: the judge runs the tests; the candidate runs in its own process.

`run_code_task` runs in the sandbox's run child (the harness). It never executes candidate code:
it starts the program in a fresh interpreter (server.py; a new exec, not a fork, so the tests
were never in that memory) and runs the tests here against proxies whose calls cross a socket
as plain data (wire.py). The candidate cannot reach the tests, the records or the timers; it can
only return values (exact builtins, rebuilt here), raise, hang, or die. Each test's record is
written here: it starts as failed and becomes passed only when the test body completed here with
no failure of the candidate's process in between. Stdlib only.
"""

from __future__ import annotations

import ast
import builtins
import hashlib
import signal
import sys
import time
import traceback
import types
from dataclasses import dataclass
from typing import Any

from validators.code.candidate import START_ALLOWANCE_S, Candidate, CandidateFailure, Remote
from validators.python_source import parse

TESTS_FILE = "<tests>"
# The timer backs up the per-call deadlines, for tests that hang on their own; it leaves room for
# a restart of the candidate's process within a test, which has a deadline of its own.
TIMER_GRACE_S = START_ALLOWANCE_S + 1.0
UNIT_HOOKS = ("__gs_begin__", "__gs_end__")
DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)
# A test may use what the tests before it left of the task's budget, less this much (or a fair
# share, when there are many) kept back for each test still to come.
RESERVE_S = 1.0


class TestsError(ValueError):
    """The tests cannot be run (no tests found, a syntax error); the message says why."""


class TestTimeout(BaseException):
    """A test ran past its time (raised by the timer)."""


@dataclass
class Plan:
    """What will run: the style, the test names in order, and the (instrumented) test module."""

    style: str
    names: list[str]
    tree: ast.Module


def hash_tests(tests: str, context: str = "") -> str:
    """SHA-256 of the tests and their trusted context, as sent to the sandbox."""
    return hashlib.sha256(f"{len(context)}:{context}{tests}".encode()).hexdigest()


def plan_tests(tests: str, style: str = "auto") -> Plan:
    """Find the tests: `check(candidate)` (each assertion a test), pytest-style `test*`, or
    MBPP-style `assert f(x) == y` lines at the top level (each a test)."""
    try:
        # The host plans the tests from its validation threads too, so the parse takes the lock.
        tree = parse(tests, TESTS_FILE)
    except SyntaxError as exc:
        raise TestsError(f"the tests have a syntax error at line {exc.lineno}: {exc.msg}") from exc
    functions = [n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    check = next((f for f in functions if f.name == "check"), None)
    pytest_names = [f.name for f in functions if f.name.startswith("test")]
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            pytest_names += [
                f"{node.name}.{m.name}"
                for m in node.body
                if isinstance(m, ast.FunctionDef) and m.name.startswith("test")
            ]
    if style == "auto":
        if check is not None and not pytest_names:
            style = "check"
        else:
            style = "pytest" if pytest_names or not any(map(_is_unit, tree.body)) else "asserts"
    if style == "check":
        if not isinstance(check, ast.FunctionDef):
            raise TestsError("style 'check' needs a top-level function `def check(candidate):`")
        check.body, names = _instrument(check.body, "check")
        ast.fix_missing_locations(tree)
        return Plan(style, names or ["check"], tree)
    if style == "asserts":
        tree.body, names = _instrument(_grouped(tree.body), "assert")
        if not names:
            raise TestsError("style 'asserts' needs top-level `assert` lines")
        ast.fix_missing_locations(tree)
        return Plan(style, names, tree)
    if style != "pytest":
        raise TestsError(f"style must be 'auto', 'check', 'pytest' or 'asserts', not {style!r}")
    if not pytest_names:
        raise TestsError(
            "no tests found: define `check(candidate)`, functions named test_*, or top-level "
            "`assert` lines"
        )
    return Plan(style, pytest_names, tree)


def _grouped(body: list[ast.stmt]) -> list[ast.stmt]:
    """Top-level statements with each assert joined to the plain statements just before it
    (`result = f(x)` then `assert result == y` is one test); definitions stay apart."""
    out: list[ast.stmt] = []
    pending: list[ast.stmt] = []
    for statement in body:
        if isinstance(statement, DEFINITIONS):
            out += [*pending, statement]
            pending = []
        elif _is_unit(statement):
            if pending:  # one statement for the wrapper; it keeps the assert's line as its name
                statement = ast.If(ast.Constant(True), [*pending, statement], [])
                ast.copy_location(statement, statement.body[-1])
            out.append(statement)
            pending = []
        else:
            pending.append(statement)
    return out + pending


def _is_unit(statement: ast.stmt) -> bool:
    if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return False
    if isinstance(statement, ast.Assert) and isinstance(statement.test, ast.Constant):
        return False  # `assert True`: proves nothing about the candidate
    return any(isinstance(node, ast.Assert) for node in ast.walk(statement))


def _instrument(statements: list[ast.stmt], prefix: str) -> tuple[list[ast.stmt], list[str]]:
    """Wrap each statement that asserts, so that each is recorded alone; (new body, names)."""
    names: list[str] = []
    body: list[ast.stmt] = []
    for statement in statements:
        if not _is_unit(statement):
            body.append(statement)
            continue
        index = len(names)
        line = statement.body[-1].lineno if isinstance(statement, ast.If) else statement.lineno
        names.append(f"{prefix}:{line}")
        begin, end = (ast.Name(hook, ast.Load()) for hook in UNIT_HOOKS)
        error = ast.Name("__gs_error__", ast.Load())
        wrapped: list[ast.stmt] = [
            ast.Expr(ast.Call(begin, [ast.Constant(index)], [])),
            ast.Try(
                body=[statement],
                handlers=[
                    ast.ExceptHandler(
                        ast.Name("BaseException", ast.Load()),
                        "__gs_error__",
                        [ast.Expr(ast.Call(end, [ast.Constant(index), error], []))],
                    )
                ],
                orelse=[ast.Expr(ast.Call(end, [ast.Constant(index), ast.Constant(None)], []))],
                finalbody=[],
            ),
        ]
        inner = {id(node) for node in ast.walk(statement)}
        for node in wrapped:
            for child in ast.walk(node):
                if id(child) not in inner:
                    ast.copy_location(child, statement)
        body.extend(wrapped)
    return body, names


class BudgetSpent(BaseException):
    """The run's time budget is spent: the remaining tests do not start."""


def _alarm(signum: int, frame: Any) -> None:
    raise TestTimeout()


class Judge:
    """Runs the planned tests in this process and writes one record per test."""

    def __init__(self, plan: Plan, candidate: Candidate, tests: str, options: dict[str, Any]):
        self.plan, self.candidate, self.lines = plan, candidate, tests.splitlines()
        cap = options.get("per_test_timeout_s")
        self.per_test_s = float(cap) if cap else None  # an optional hard cap per test
        self.budget_s = float(options.get("budget_s", 10.0))
        self.budget_end = time.monotonic() + self.budget_s
        self.records = {
            name: {
                "name": name,
                "passed": False,
                "reason": "not run",
                "duration_s": 0.0,
                "allowed_s": 0.0,
                "timeout": False,
            }
            for name in plan.names
        }
        self.ended: set[str] = set()
        self.begun = 0
        self.started = 0.0
        self.allowed_s = 0.0

    def arm(self, still_to_come: int | None = None) -> None:
        """Give the code that runs next its time: a deadline for calls, a timer for the rest.

        It may use what is left of the task's budget, less a reserve for each test still to
        come: RESERVE_S, or an even share of what is left when there are many tests. So a slow
        test can take the time fast ones left, and cannot starve the tests after it.
        """
        now = time.monotonic()
        remaining = self.budget_end - now
        if remaining <= 0:
            raise BudgetSpent()
        later = len(self.plan.names) - self.begun if still_to_come is None else still_to_come
        self.allowed_s = remaining - min(RESERVE_S, remaining / (later + 1)) * later
        if self.per_test_s is not None:
            self.allowed_s = min(self.allowed_s, self.per_test_s)
        self.candidate.deadline = now + self.allowed_s
        self.candidate.allowed_s = self.allowed_s
        signal.setitimer(signal.ITIMER_REAL, self.allowed_s + TIMER_GRACE_S)

    def begin(self, name: str) -> None:
        """A test starts."""
        self.candidate.test, self.started = name, time.monotonic()
        self.begun += 1
        self.arm()
        self.records[name]["allowed_s"] = round(self.allowed_s, 3)

    def end(self, name: str, error: BaseException | None) -> None:
        """A test ended: passed only if its body completed and the candidate never failed."""
        signal.setitimer(signal.ITIMER_REAL, 0)
        record = self.records[name]
        self.ended.add(name)
        record["duration_s"] = round(time.monotonic() - self.started, 4) if self.started else 0.0
        timeout = isinstance(error, TestTimeout | BudgetSpent)
        record["timeout"] = timeout or getattr(error, "kind", "") == "timeout"
        if error is None and not self.candidate.poisoned:
            record.update(passed=True, reason=None)
        elif error is None:  # the test caught the failure; it still counts
            record["reason"] = self.candidate.poisoned[:500]
        else:
            record["reason"] = self.reason(error)
        self.candidate.poisoned = ""

    def abort(self, error: BaseException, prefix: str = "not reached: ") -> None:
        """Fail every test that has not ended, saying why."""
        signal.setitimer(signal.ITIMER_REAL, 0)
        for name, record in self.records.items():
            if name not in self.ended:
                record["reason"] = prefix + self.reason(error)
                record["timeout"] = isinstance(error, TestTimeout | BudgetSpent) or (
                    getattr(error, "kind", "") == "timeout"
                )

    def of_budget(self) -> str:
        """How a test's time relates to the task's budget, for messages."""
        return f" (of the task's {self.budget_s:g} s for {len(self.plan.names)} tests)"

    def reason(self, error: BaseException) -> str:
        """Why a test failed, in words a person can act on."""
        if isinstance(error, CandidateFailure):
            return str(error)[:500]
        if isinstance(error, TestTimeout):
            return f"the test ran longer than the {self.allowed_s:.3g} s it had{self.of_budget()}"
        if isinstance(error, BudgetSpent):
            return f"the task's time budget of {self.budget_s:g} s was spent by the tests before"
        info = getattr(error, "gs_candidate", None)
        if isinstance(info, dict):
            where = f" (line {info['line']} of the program)" if info.get("line") else ""
            return f"the program raised {info.get('type')}: {info.get('message')}{where}"[:500]
        frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename == TESTS_FILE]
        line = frames[-1].lineno if frames else None
        text = self.lines[line - 1].strip() if line and 0 < line <= len(self.lines) else ""
        detail = f": {error}" if str(error) else ""
        if isinstance(error, AssertionError):
            return f"assertion failed at line {line}: {text}{detail}"[:500]
        return f"{type(error).__name__}{detail} (line {line} of the tests: {text})"[:500]

    def run(self, namespace: dict[str, Any]) -> None:
        """Run every planned test; whatever happens, each test ends with a record."""
        try:
            if self.plan.style == "check":
                self._run_check(namespace)
            elif self.plan.style == "asserts":
                self._run_asserts(namespace)
            else:
                for name in self.plan.names:
                    self._run_one(namespace, name)
        except BaseException as exc:  # e.g. the timer firing between two tests
            self.abort(exc, "interrupted: ")

    def _run_check(self, namespace: dict[str, Any]) -> None:
        # The proxy itself, not namespace[entry_point]: the tests may define a name like it.
        check, entry = namespace.get("check"), Remote(self.candidate, self.candidate.entry_point)
        whole = self.plan.names == ["check"]
        namespace[UNIT_HOOKS[0]] = lambda index: self.begin(self.plan.names[index])
        namespace[UNIT_HOOKS[1]] = lambda index, error: self.end(self.plan.names[index], error)
        self.candidate.test = "check"
        try:
            self.begin("check") if whole else self.arm()
            if not callable(check):
                raise TypeError("the tests do not define check()")
            check(entry)
        except BaseException as exc:
            self.end("check", exc) if whole else self.abort(exc)
            return
        if whole:
            self.end("check", None)
        else:
            self.abort(AssertionError("check() returned before this assertion"), "")

    def _run_asserts(self, namespace: dict[str, Any]) -> None:
        namespace[UNIT_HOOKS[0]] = lambda index: self.begin(self.plan.names[index])
        namespace[UNIT_HOOKS[1]] = lambda index, error: self.end(self.plan.names[index], error)
        exec(compile(self.plan.tree, TESTS_FILE, "exec"), namespace)
        if len(self.ended) < len(self.plan.names):
            self.abort(AssertionError("the tests ended before this assertion"), "")

    def _run_one(self, namespace: dict[str, Any], name: str) -> None:
        error: BaseException | None = None
        try:
            self.begin(name)
            function = _resolve(namespace, name)
            result = function()
            if isinstance(result, types.CoroutineType | types.GeneratorType):
                result.close()
                raise TypeError("async and generator tests are not supported")
        except BaseException as exc:
            error = exc
        self.end(name, error)


def _resolve(namespace: dict[str, Any], name: str) -> Any:
    """The callable for a test name: a function, or a method of a fresh Test* instance."""
    owner, _, method = name.rpartition(".")
    function = getattr(namespace[owner](), method) if owner else namespace[name]
    code = getattr(getattr(function, "__func__", function), "__code__", None)
    if code is not None:
        defaults = len(getattr(function, "__defaults__", None) or ())
        needed = code.co_argcount - defaults - (1 if hasattr(function, "__func__") else 0)
        if needed > 0:
            raise TypeError("the test takes arguments: pytest fixtures are not supported")
    return function


def _namespace(candidate: Candidate, context: str) -> dict[str, Any]:
    """The tests' globals: the trusted context, then proxies for the program's functions."""
    namespace: dict[str, Any] = {"__name__": "__tests__", "__builtins__": builtins}
    if context:
        exec(compile(context, "<context>", "exec"), namespace)
    for name in candidate.functions:
        namespace.setdefault(name, Remote(candidate, name))
    namespace[candidate.entry_point] = Remote(candidate, candidate.entry_point)
    module = types.ModuleType("solution")  # for `from solution import f` in pytest-style tests
    module.__getattr__ = lambda name: Remote(candidate, name)  # type: ignore[method-assign]
    sys.modules["solution"] = module
    return namespace


def run_code_task(source: str, options: dict[str, Any]) -> dict[str, Any]:
    """Runner "code": run the tests against the program; the payload holds one record per test."""
    tests, context = str(options["tests"]), str(options.get("context") or "")
    digest = hash_tests(tests, context)
    payload: dict[str, Any] = {"tests_sha256": digest, "tests": [], "events": []}
    if options.get("tests_sha256") not in (None, digest):
        payload["error"] = {"kind": "tests_hash", "message": "the tests changed in transit"}
        return payload
    try:
        plan = plan_tests(tests, str(options.get("style") or "auto"))
    except TestsError as exc:
        payload["error"] = {"kind": "bad_tests", "message": str(exc)}
        return payload
    candidate = Candidate(source, str(options["entry_point"]), payload["events"])
    judge = Judge(plan, candidate, tests, options)
    previous = signal.signal(signal.SIGALRM, _alarm)
    # Writing to a candidate's process that died must be an error here, not a death by SIGPIPE.
    previous_pipe = signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    try:
        candidate.budget_end = judge.budget_end
        judge.arm()
        candidate.start()
        try:
            judge.arm()
            namespace = _namespace(candidate, context)
            if plan.style != "asserts":  # there, running the module is running the tests
                exec(compile(plan.tree, TESTS_FILE, "exec"), namespace)
        except BaseException as exc:
            judge.abort(exc, "the tests failed to load: ")
        else:
            judge.run(namespace)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        signal.signal(signal.SIGPIPE, previous_pipe)
        candidate.kill()
    payload.update(
        style=plan.style,
        tests=list(judge.records.values()),
        load={
            "ok": candidate.loaded,
            "error": None if candidate.loaded else candidate.load_error,
        },
        starts=candidate.starts,
    )
    return payload
