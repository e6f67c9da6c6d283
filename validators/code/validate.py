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

DEFAULT_PER_TEST_TIMEOUT_S = 3.0
START_S = 3.0  # the candidate's interpreter start and the test module's import
MARGIN_S = 1.0  # the judge reports this long before the sandbox's wall clock runs out
MAX_WALL_S = 120.0
SHOWN_FAILURES = 20


def default_limits(tests_total: int, per_test_timeout_s: float) -> Limits:
    """Limits with room for every test to use its whole time."""
    wall = START_S + MARGIN_S + per_test_timeout_s * (tests_total + 1)
    return Limits(wall_s=min(MAX_WALL_S, max(10.0, wall)))


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
    per_test_timeout_s: float = DEFAULT_PER_TEST_TIMEOUT_S,
    weights: Mapping[str, float] | None = None,
) -> Report:
    """Run the tests (`check(candidate)` or pytest-style `test*`) against `source`; a Report.

    `context` is trusted code the tests may use (e.g. HumanEval's prompt with its helpers); it
    runs with the tests, never with the candidate. Never raises.
    """
    started = time.monotonic()
    try:
        return _validate(
            source, executor, tests, entry_point, style, partial_credit, limits, context,
            per_test_timeout_s, weights, started,
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
    per_test_timeout_s: float,
    weights: Mapping[str, float] | None,
    started: float,
) -> Report:
    not_run = {"executes": Check(0.0, False, {"stage": "not run"})}
    try:
        if not entry_point.isidentifier():
            raise TestsError(f"the entry point must be a Python name, not {entry_point!r}")
        if not 0 < per_test_timeout_s <= 600:
            raise TestsError("per_test_timeout_s must be in (0, 600]")
        plan = plan_tests(tests, style)
        parse(context, "<context>")
    except (TestsError, SyntaxError) as exc:
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
    limits = limits or default_limits(len(plan.names), per_test_timeout_s)
    digest = hash_tests(tests, context)
    options = {
        "tests": tests,
        "context": context,
        "tests_sha256": digest,
        "entry_point": entry_point,
        "style": plan.style,
        "per_test_timeout_s": per_test_timeout_s,
        "budget_s": max(0.5, limits.wall_s - min(MARGIN_S, 0.25 * limits.wall_s)),
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
