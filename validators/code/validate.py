"""Validate a Python program against hidden tests: run them in the sandbox, scan for hacks.

Checks: `executes` (the program loaded and defines the entry point), `tests` (1 only when every
test passed; with partial_credit, the fraction passed) and `hack_scan` (static scan plus what the
judge saw at run time). A definite hack makes the Report invalid, scores the tests 0 and gates
the reward to the floor. The tests run in the sandbox's judge process, never in the candidate's
(see guest.py); a test without a record from the judge counts as failed.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from validators.code import hacks
from validators.code.guest import TestsError, hash_tests, plan_tests
from validators.python_source import parse
from validators.report import Check, ErrorInfo, Report
from validators.reward import composite_reward
from validators.sandbox.limits import Limits
from validators.sandbox.result import SandboxResult

if TYPE_CHECKING:  # the protocol lives with the CAD validator; importing it here would load trimesh
    from validators.cad.validate import Executor

# Seconds for all of a task's tests together (loading the program included). HumanEval's own
# harness gives a whole program 3 s on the machine it was written for, and MBPP's harnesses the
# same; here the program also starts a fresh sandboxed interpreter, and shared 2-core machines
# run several times slower, so 10 s keeps slow but correct solutions passing while a hang still
# ends quickly. Within it each test may use what the tests before it left (guest.Judge.arm).
DEFAULT_TIME_BUDGET_S = 10.0
MAX_TIME_BUDGET_S = 300.0
START_S = 3.0  # the candidate's interpreter start and the test module's import
MARGIN_S = 1.0  # the judge reports this long before the sandbox's wall clock runs out
SHOWN_FAILURES = 20


def default_limits(time_budget_s: float = DEFAULT_TIME_BUDGET_S) -> Limits:
    """Sandbox limits with room for the whole time budget, the start and the report."""
    return Limits(wall_s=max(10.0, START_S + MARGIN_S + time_budget_s))


def check_time(time_budget_s: float | None, per_test_timeout_s: float | None = None) -> float:
    """The task's time budget (the default when None); ValueError when out of range."""
    budget = DEFAULT_TIME_BUDGET_S if time_budget_s is None else float(time_budget_s)
    if not 0 < budget <= MAX_TIME_BUDGET_S:
        raise ValueError(f"time_budget_s must be in (0, {MAX_TIME_BUDGET_S:g}] seconds")
    if per_test_timeout_s is not None and not 0 < per_test_timeout_s <= MAX_TIME_BUDGET_S:
        raise ValueError(f"per_test_timeout_s must be in (0, {MAX_TIME_BUDGET_S:g}] seconds")
    return budget


def validate_code(
    source: str,
    executor: Executor,
    *,
    tests: str,
    entry_point: str,
    style: str = "auto",
    partial_credit: bool = False,
    limits: Limits | None = None,
    context: str = "",
    time_budget_s: float | None = None,
    per_test_timeout_s: float | None = None,
    weights: Mapping[str, float] | None = None,
) -> Report:
    """Run the tests (`check(candidate)`, pytest-style `test*`, or top-level `assert` lines)
    against `source`; a Report.

    `context` is trusted code the tests may use (e.g. HumanEval's prompt with its helpers); it
    runs with the tests, never with the candidate. `time_budget_s` is for all the tests together
    (default DEFAULT_TIME_BUDGET_S), shared fairly between them; `per_test_timeout_s` optionally
    caps each test as well. Never raises.
    """
    started = time.monotonic()
    try:
        return _validate(
            source, executor, tests, entry_point, style, partial_credit, limits, context,
            time_budget_s, per_test_timeout_s, weights, started,
        )  # fmt: skip
    except Exception as exc:  # a bug here must not take the caller down: report it instead
        checks = {"executes": Check(0.0, False, {"stage": "validator"})}
        error = ErrorInfo("internal", f"the code validator failed: {type(exc).__name__}: {exc}")
        return _report(checks, False, error, {"duration_s": time.monotonic() - started}, weights)


def _report(
    checks: dict[str, Check],
    gate: bool,
    error: ErrorInfo | None,
    metrics: dict[str, Any],
    weights: Mapping[str, float] | None,
) -> Report:
    reward = composite_reward(checks, gate, weights, domain="code")
    valid = error is None and all(check.passed for check in checks.values())
    metrics["duration_s"] = round(metrics.get("duration_s", 0.0), 4)
    return Report.build(valid, reward, checks, error, metrics)


def _validate(
    source: str,
    executor: Executor,
    tests: str,
    entry_point: str,
    style: str,
    partial_credit: bool,
    limits: Limits | None,
    context: str,
    time_budget_s: float | None,
    per_test_timeout_s: float | None,
    weights: Mapping[str, float] | None,
    started: float,
) -> Report:
    not_run = {"executes": Check(0.0, False, {"stage": "not run"})}
    try:
        if not entry_point.isidentifier():
            raise TestsError(f"the entry point must be a Python name, not {entry_point!r}")
        budget = check_time(time_budget_s, per_test_timeout_s)
        plan = plan_tests(tests, style)
        parse(context, "<context>")
    except (TestsError, SyntaxError, ValueError) as exc:
        error = ErrorInfo("bad_tests", f"the task's tests cannot be used: {exc}")
        return _report(not_run, False, error, {"duration_s": time.monotonic() - started}, weights)
    metrics: dict[str, Any] = {"tests_total": len(plan.names), "tests_passed": 0}
    try:
        tree = parse(source, "<program>")
    except (SyntaxError, ValueError) as exc:
        line = getattr(exc, "lineno", None)
        message = f"SyntaxError: {getattr(exc, 'msg', exc)}" + (f" (line {line})" if line else "")
        checks = {
            "executes": Check(0.0, False, {"stage": "parse"}),
            "tests": Check(0.0, False, {"reason": "not run: the program does not parse"}),
        }
        metrics["duration_s"] = time.monotonic() - started
        return _report(checks, False, ErrorInfo("syntax", message, line), metrics, weights)
    findings = hacks.scan(tree)
    # The sandbox's wall clock always leaves room for the whole budget (a caller's limits may
    # have been chosen for CAD scripts).
    room = default_limits(budget)
    limits = room if limits is None else replace(limits, wall_s=max(limits.wall_s, room.wall_s))
    digest = hash_tests(tests, context)
    options = {
        "tests": tests,
        "context": context,
        "tests_sha256": digest,
        "entry_point": entry_point,
        "style": plan.style,
        "per_test_timeout_s": per_test_timeout_s,
        "budget_s": budget,
    }
    result = executor.run("code", source, options, limits)
    metrics.update(sandbox_s=round(result.duration_s, 4), peak_memory_mb=result.peak_memory_mb)
    payload = result.payload if result.ok else None
    if payload is None or payload.get("error") or payload.get("tests_sha256") != digest:
        checks, error = _run_failed(result, payload, findings)
        metrics["duration_s"] = time.monotonic() - started
        return _report(checks, False, error, metrics, weights)
    return _judge(payload, plan.names, findings, partial_credit, metrics, weights, started)


def _run_failed(
    result: SandboxResult,
    payload: dict[str, Any] | None,
    findings: list[hacks.Finding],
) -> tuple[dict[str, Check], ErrorInfo]:
    """Checks and error for a run that produced no usable test records."""
    if payload is not None and isinstance(payload.get("error"), dict):
        kind = str(payload["error"].get("kind", "sandbox"))
        message = str(payload["error"].get("message", "the tests could not run"))
    elif payload is not None:
        kind, message = "sandbox", "the sandbox answered for other tests than the ones sent"
    else:
        error = result.error or {}
        kind = str(error.get("kind") or result.status.value)
        message = str(error.get("message") or f"the run ended with status {result.status.value}")
        message = f"the tests did not finish: {message}"
    detail = {"status": result.status.value, "stderr": result.stderr[-2000:]}
    checks = {
        "executes": Check(0.0, False, detail),
        "tests": Check(0.0, False, {"reason": message}),
        "hack_scan": hacks.hack_check(findings),
    }
    if not checks["hack_scan"].passed:
        return checks, ErrorInfo("hack", hacks.describe(findings), _first_line(findings))
    return checks, ErrorInfo(kind, message)


def _first_line(findings: list[hacks.Finding]) -> int | None:
    lines = [f.line for f in findings if f.hack and f.line]
    return lines[0] if lines else None


def _judge(
    payload: dict[str, Any],
    names: list[str],
    findings: list[hacks.Finding],
    partial_credit: bool,
    metrics: dict[str, Any],
    weights: Mapping[str, float] | None,
    started: float,
) -> Report:
    """The Report from the judge's records: a test without a record has failed."""
    records = {
        r["name"]: r for r in payload.get("tests") or [] if isinstance(r, dict) and "name" in r
    }
    failures: list[dict[str, Any]] = []
    for name in names:
        record = records.get(name) or {"passed": False, "reason": "no record of this test"}
        if record.get("passed") is not True:
            failures.append(
                {
                    "name": name,
                    "reason": record.get("reason"),
                    "timeout": bool(record.get("timeout")),
                }
            )
    passed, total = len(names) - len(failures), len(names)
    events = [e for e in payload.get("events") or [] if isinstance(e, dict)]
    load: dict[str, Any] = payload["load"] if isinstance(payload.get("load"), dict) else {}
    load_error = load.get("error") if isinstance(load.get("error"), dict) else None
    hack = hacks.hack_check(findings, events)
    executes = Check(
        float(load_error is None and bool(load.get("ok"))),
        load_error is None and bool(load.get("ok")),
        {"error": load_error, "starts": payload.get("starts"), "events": events},
    )
    score = passed / total if partial_credit else float(passed == total)
    tests_detail: dict[str, Any] = {
        "passed": passed,
        "total": total,
        "style": payload.get("style"),
        "partial_credit": partial_credit,
        "failures": failures[:SHOWN_FAILURES],
    }
    if not hack.passed:
        score, tests_detail["reason"] = 0.0, "a reward hack was found: tests count for nothing"
    checks = {
        "executes": executes,
        "tests": Check(score, hack.passed and passed == total, tests_detail),
        "hack_scan": hack,
    }
    metrics.update(tests_passed=passed, duration_s=time.monotonic() - started)
    error = None
    if not hack.passed:
        error = ErrorInfo("hack", hacks.describe(findings, events), _first_line(findings))
    elif load_error is not None:
        line = load_error.get("line")
        kind, message = str(load_error.get("kind")), str(load_error.get("message"))
        error = ErrorInfo(kind, message, line if isinstance(line, int) else None)
    elif failures:
        first = failures[0]
        kind = "timeout" if all(f["timeout"] for f in failures) else "tests_failed"
        message = f"{len(failures)} of {total} tests failed; {first['name']}: {first['reason']}"
        error = ErrorInfo(kind, message)
    return _report(checks, executes.passed and hack.passed, error, metrics, weights)
