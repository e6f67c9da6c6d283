"""Parsing from many threads at once: one parse at a time (CPython 3.11's AST state is shared)."""

from __future__ import annotations

import ast
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from validators.cad.program import find_parameters, parse
from validators.code.guest import plan_tests
from validators.code.hacks import scan

PROGRAM = "import cadquery as cq\nwidth = 20.0\nresult = cq.Workplane().box(width, 10, 5)\n"


def test_parses_from_many_threads_never_overlap(monkeypatch: pytest.MonkeyPatch) -> None:
    real_parse, inside, most = ast.parse, [0], [0]
    count = threading.Lock()

    def watched(*args: Any, **kwargs: Any) -> Any:
        with count:
            inside[0] += 1
            most[0] = max(most[0], inside[0])
        time.sleep(0.002)  # long enough for another thread to come in, were it let in
        try:
            return real_parse(*args, **kwargs)
        finally:
            with count:
                inside[0] -= 1

    monkeypatch.setattr(ast, "parse", watched)
    jobs = [
        lambda: find_parameters(parse(PROGRAM)),
        lambda: scan("def f(x):\n    return x\n"),
        lambda: plan_tests("def check(candidate):\n    assert candidate(1) == 1\n").names,
    ]
    with ThreadPoolExecutor(8) as threads:
        results = list(threads.map(lambda k: jobs[k % 3](), range(48)))
    assert most[0] == 1, "two parses ran at once"
    assert all(result is not None for result in results)
    assert set(results[0]) == {"width"}
