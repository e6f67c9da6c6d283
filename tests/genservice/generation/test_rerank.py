"""rerank: candidates validated in parallel on the sandbox pool, best first, no reference used."""

from __future__ import annotations

import threading

import pytest

from genservice.generation.rerank import rerank

SPEC = {"bbox_mm": [20.0, 10.0, 5.0]}
BROKEN = "import cadquery as cq\nresult = cq.Workplane('XY').box(20, 10, 5\n"
BOX = "import cadquery as cq\nlength = 20.0\nresult = cq.Workplane('XY').box(length, 10, 5)\n"
FAR = "import cadquery as cq\nresult = cq.Workplane('XY').box(60, 40, 30)\n"
TESTS = "def check(candidate):\n    assert candidate(2, 3) == 5\n    assert candidate(-1, 1) == 0\n"


class CountingPool:
    """The shared pool, counting runs and the most at once."""

    def __init__(self, pool):
        self.pool, self.size = pool, pool.size
        self.runs, self.running, self.most = 0, 0, 0
        self.lock = threading.Lock()

    def run(self, *args, **kwargs):
        with self.lock:
            self.runs += 1
            self.running += 1
            self.most = max(self.most, self.running)
        try:
            return self.pool.run(*args, **kwargs)
        finally:
            with self.lock:
                self.running -= 1


def test_the_valid_candidate_that_meets_the_spec_wins(pool):
    ranked = rerank([BROKEN, BOX, FAR], "cad", pool, spec=SPEC)
    assert [s.index for s in ranked] == [1, 2, 0]
    best, far, broken = ranked
    assert best.program == BOX and best.valid and best.report.checks["spec"].passed
    assert not far.valid and not far.report.checks["spec"].passed  # sound, but not as asked
    assert far.report.checks["solid"].passed
    assert not broken.valid and broken.report.error.kind == "syntax"
    assert best.reward > far.reward > broken.reward == 0.0
    assert best.reward == best.report.reward


def test_candidates_run_in_parallel_and_duplicates_once(pool):
    counting = CountingPool(pool)
    ranked = rerank([FAR, BOX, BOX, FAR], "cad", counting, spec=SPEC)
    assert counting.runs == 2 and counting.most == 2
    assert [s.index for s in ranked] == [1, 2, 0, 3]  # equal rewards keep sampling order


def test_ties_go_to_the_valid_then_the_earlier(pool):
    ranked = rerank([BROKEN, "x = (\n"], "cad", pool)
    assert [s.index for s in ranked] == [0, 1]


def test_a_valid_candidate_beats_an_invalid_one_with_a_higher_reward(monkeypatch):
    """A sound part that misses the spec is invalid but keeps a reward; validity leads."""
    import validators.cad.validate as cad
    from validators.report import Check, Report

    reports = {
        "misses": Report.build(False, 0.9, {"spec": Check(0.5, False)}),
        "meets": Report.build(True, 0.6, {"spec": Check(1.0, True)}),
    }
    monkeypatch.setattr(
        cad, "run_cad", lambda program, pool, **kwargs: cad.CadRun(reports[program], None)
    )
    ranked = rerank(["misses", "meets"], "cad", pool=None)
    assert [s.program for s in ranked] == ["meets", "misses"]


def test_code_candidates_are_ranked_by_their_tests(pool):
    wrong = "def add(a, b):\n    return a - b\n"
    right = "def add(a, b):\n    return a + b\n"
    progress: list[tuple[int, int]] = []
    ranked = rerank(
        [wrong, right],
        "code",
        pool,
        tests=TESTS,
        entry_point="add",
        progress=lambda done, total: progress.append((done, total)),
    )
    assert ranked[0].program == right and ranked[0].valid
    assert ranked[0].reward > ranked[1].reward
    assert progress[-1] == (2, 2)


def test_bad_arguments_are_refused(pool):
    with pytest.raises(ValueError, match="tests and an entry_point"):
        rerank(["pass\n"], "code", pool)
    with pytest.raises(ValueError, match="code domain only"):
        rerank(["pass\n"], "cad", pool, tests=TESTS)
    with pytest.raises(ValueError, match="domain"):
        rerank(["pass\n"], "mesh", pool)
    assert rerank([], "cad", pool) == []
