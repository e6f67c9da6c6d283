"""Validator rewards for RL: a task's own checks turned into reward functions.

A candidate program is judged exactly as `genservice validate-tasks` judges a task's reference:
CAD and scenes by the geometry checks, the task's spec and the similarity to its reference shape
(built once per task in the sandbox, never shown to the candidate); code by its hidden tests,
with partial credit (share of tests passed) so that a group's rewards differ more often. The
reward is the Report's composite reward (validators/reward_weights.yaml), plus DAPO's soft
penalty for outputs that run into the token limit.

`TaskRewards.submit` validates on a thread per sandbox worker, so the trainer can keep
generating the next prompt's candidates while this prompt's are checked. `reward_functions`
wraps the same judge as TRL-style reward functions (one for the composite reward, one per check)
for trainers that take those.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Collection, Mapping, Sequence
from concurrent.futures import Executor, Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from validators.report import Check, ErrorInfo, Report

Judge = Callable[[str], Report]


@dataclass(frozen=True)
class Judged:
    """One candidate's verdict: its Report, reward (penalty included) and when it was checked."""

    report: Report
    reward: float
    penalty: float
    started: float  # time.monotonic() when validation began
    finished: float

    @property
    def valid(self) -> bool:
        """Whether the validators accepted the program."""
        return self.report.valid


def overlong_penalty(length: int, max_new_tokens: int, buffer: int, penalty: float) -> float:
    """DAPO's soft length penalty (≤ 0): 0 up to max - buffer, then linear to -penalty at max."""
    if buffer <= 0 or penalty <= 0:
        return 0.0
    start = max_new_tokens - buffer
    if length <= start:
        return 0.0
    return -penalty * min(1.0, (length - start) / buffer)


def shaped_reward(
    report: Report,
    weights: Mapping[str, float],
    pass_fail: Collection[str] = (),
    strict: bool = False,
    floor: float = 0.0,
    near_miss: float = 0.0,
) -> float:
    """The composite reward under `weights`, with the `pass_fail` checks scored 1 or 0.

    A Report whose own gate failed (the program did not run, built no sound geometry, or its
    tests could not be trusted) gets `floor`, as in its own reward. `strict` also gives `floor`
    to a Report that is not valid (a required check such as the spec failed), so the reward is
    success as `genservice eval` counts it, graded only among programs that fully succeed;
    with `near_miss` > 0 such a sound near miss gets that fraction of its composite reward
    instead, so a broken program still ranks below one that only missed its spec.
    """
    from validators.reward import composite_reward

    if not report.valid and report.reward <= floor:
        return floor
    checks = {
        name: Check(1.0 if check.passed else 0.0, check.passed, check.detail)
        if name in pass_fail
        else check
        for name, check in report.checks.items()
    }
    reward = composite_reward(checks, True, weights)
    if not report.valid and strict:
        return floor + near_miss * (reward - floor)
    return reward


class TaskRewards:
    """Judge candidate programs of task rows with the tasks' own validators (thread-safe)."""

    def __init__(
        self,
        pool: Any,
        limits: Any = None,
        base: Path | str = ".",
        partial_credit: bool = True,
        cache_size: int = 256,
        shaping: Any = None,
    ) -> None:
        self.pool = pool
        self.limits = limits
        self.base = Path(base)
        self.partial_credit = partial_credit
        self.shaping = shaping  # rl_config.RewardShaping, or None for the Report's own reward
        self._judges: OrderedDict[str, Judge | str] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()
        self._building: dict[str, threading.Lock] = {}

    def judge(self, task: dict[str, Any]) -> Judge:
        """The task's program -> Report function (its reference shape is built once and kept).

        Raises ValueError when the task cannot judge anything (its reference does not build).
        """
        key = str(task["id"])
        with self._lock:
            gate = self._building.setdefault(key, threading.Lock())
        with gate:  # one thread builds a task's reference; the others wait for it
            with self._lock:
                found = self._judges.get(key)
                if found is not None:
                    self._judges.move_to_end(key)
            if found is None:
                from genservice.task_audit import task_judge

                try:
                    found = task_judge(task, self.base, self.pool, self.limits, self.partial_credit)
                except ValueError as exc:
                    found = f"task {key} cannot be judged: {exc}"
                with self._lock:
                    self._judges[key] = found
                    while len(self._judges) > self._cache_size:
                        self._judges.popitem(last=False)
        if isinstance(found, str):
            raise ValueError(found)
        return found

    def report(self, task: dict[str, Any], program: str) -> Report:
        """The Report of one candidate; a task that cannot judge gives an invalid Report."""
        try:
            return self.judge(task)(program)
        except ValueError as exc:
            checks = {"executes": Check(0.0, False, {"stage": "task"})}
            return Report.build(False, 0.0, checks, ErrorInfo("task", str(exc)))

    def judged(
        self, task: dict[str, Any], program: str, length: int = 0, max_new_tokens: int = 0,
        buffer: int = 0, penalty: float = 0.0,
    ) -> Judged:  # fmt: skip
        """Validate one candidate and add the overlong penalty for its length in tokens."""
        started = time.monotonic()
        report = self.report(task, program)
        cut = overlong_penalty(length, max_new_tokens, buffer, penalty) if max_new_tokens else 0.0
        return Judged(report, self.reward(task, report) + cut, cut, started, time.monotonic())

    def reward(self, task: dict[str, Any], report: Report) -> float:
        """The reward of a Report for its task: the composite one, shaped when configured."""
        if self.shaping is None:
            return report.reward
        from validators.reward import INVALID_REWARD

        domain = task["domain"]
        weights = self.shaping.domain_weights(domain)
        strict = domain in self.shaping.strict
        return shaped_reward(
            report, weights, self.shaping.pass_fail, strict, INVALID_REWARD,
            self.shaping.near_miss_for(domain),
        )  # fmt: skip

    def submit(self, executor: Executor, task: dict[str, Any], program: str, **kw: Any) -> Future:
        """Validate on `executor` (one thread per sandbox worker); a Future of `Judged`."""
        return executor.submit(self.judged, task, program, **kw)


def check_means(reports: Sequence[Report]) -> dict[str, float]:
    """Mean score of every check over the reports that have it (a check absent is not 0)."""
    sums: dict[str, list[float]] = {}
    for report in reports:
        for name, check in report.checks.items():
            sums.setdefault(name, []).append(check.score)
    return {name: sum(values) / len(values) for name, values in sorted(sums.items())}


def reward_functions(rewards: TaskRewards, checks: Sequence[str] = ()) -> list[Callable]:
    """TRL-style reward functions `f(prompts, completions, task, **kw) -> list[float | None]`.

    The first returns the composite reward; one more per name in `checks` returns that check's
    score (None where the check does not apply). `task` is the dataset column holding each
    row's task dict. Reports are cached per (task, program), so the checks cost nothing more.
    """
    cache: OrderedDict[tuple[str, str], Report] = OrderedDict()
    lock = threading.Lock()

    def reports(completions: Sequence[Any], task: Sequence[dict[str, Any]]) -> list[Report]:
        from genservice.generation.prompts import clean_completion

        out = []
        for completion, row in zip(completions, task, strict=True):
            text = completion if isinstance(completion, str) else completion[-1]["content"]
            key = (str(row["id"]), clean_completion(text))
            with lock:
                found = cache.get(key)
            if found is None:
                found = rewards.report(row, key[1])
                with lock:
                    cache[key] = found
                    while len(cache) > 4096:
                        cache.popitem(last=False)
            out.append(found)
        return out

    def validator_reward(prompts: Any, completions: Any, task: Any, **kw: Any) -> list[float]:
        found = reports(completions, task)
        return [rewards.reward(row, report) for row, report in zip(task, found, strict=True)]

    functions: list[Callable] = [validator_reward]
    for name in checks:

        def check_score(
            prompts: Any, completions: Any, task: Any, _name: str = name, **kw: Any
        ) -> list[float | None]:
            found = [report.checks.get(_name) for report in reports(completions, task)]
            return [check.score if check is not None else None for check in found]

        check_score.__name__ = f"check_{name}"
        functions.append(check_score)
    return functions
