"""Find broken tasks in a JSONL task set before compute is spent (`genservice validate-tasks`).

A task is sound when its reference passes its own checks and trivial programs fail them: the
empty program, `pass`, a constant result, an echo of the input, and for CAD a 10 mm cube. A
task a trivial program passes rewards nothing; a task its own reference fails rewards noise.
A CAD or scene task's checks include `request`, what its own words ask (asked.py), so a
reference that its words would call the wrong thing is found here too.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from validators.report import Report

REQUIRED = ("id", "domain", "prompt", "family", "split")
DOMAINS = ("cad", "scene", "code")


@dataclass
class Verdict:
    """What the audit found for one task."""

    task_id: str
    line: int
    reasons: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when nothing is wrong with the task."""
        return not self.reasons

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {"id": self.task_id, "line": self.line, "ok": self.ok, "reasons": self.reasons}


def read_tasks(path: Path) -> tuple[list[tuple[int, dict[str, Any]]], list[Verdict]]:
    """Parse the JSONL file: well-formed tasks with line numbers, and verdicts for the rest."""
    tasks: list[tuple[int, dict[str, Any]]] = []
    broken: list[Verdict] = []
    seen: set[str] = set()
    for number, raw in enumerate(path.read_text().splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            task = json.loads(raw)
        except ValueError as exc:
            broken.append(Verdict(f"line {number}", number, [f"not JSON: {exc}"]))
            continue
        if not isinstance(task, dict):
            broken.append(Verdict(f"line {number}", number, ["not a JSON object"]))
            continue
        reasons = schema_problems(task)
        task_id = str(task.get("id", f"line {number}"))
        if task_id in seen:
            reasons.append(f"duplicate id {task_id!r}")
        seen.add(task_id)
        if reasons:
            broken.append(Verdict(task_id, number, reasons))
        else:
            tasks.append((number, task))
    return tasks, broken


def schema_problems(task: dict[str, Any]) -> list[str]:
    """Missing or malformed fields of one task."""
    problems = [f"missing field {name!r}" for name in REQUIRED if name not in task]
    domain = task.get("domain")
    if domain not in DOMAINS:
        problems.append(f"domain must be one of {DOMAINS}, got {domain!r}")
    elif domain == "code":
        for name in ("tests", "entry_point", "reference"):
            if not isinstance(task.get(name), str) or not task[name].strip():
                problems.append(f"a code task needs a non-empty {name!r}")
    elif not task.get("reference") and not task.get("spec"):
        problems.append("a cad/scene task needs a reference program or a spec to be judged by")
    if "spec" in task:
        from validators.cad.validate import check_spec

        try:
            check_spec(task["spec"] if isinstance(task["spec"], dict) else {"?": None})
        except ValueError as exc:
            problems.append(f"spec: {exc}")
    return problems


def trivial_programs(task: dict[str, Any]) -> dict[str, str]:
    """Programs that must not pass the task."""
    prompt = str(task.get("prompt", ""))
    if task["domain"] == "code":
        name = task["entry_point"]
        stub = f"def {name}(*args, **kwargs):\n    return {{}}\n"
        return {
            "empty": "",
            "pass": "pass\n",
            "returns None": stub.format("None"),
            "returns 0": stub.format("0"),
            "returns ''": stub.format("''"),
            "returns []": stub.format("[]"),
            "returns True": stub.format("True"),
            "echoes its input": stub.format("args[0] if args else None"),
        }
    return {
        "empty": "",
        "pass": "pass\n",
        "constant": "result = 1\n",
        "echoes the prompt": f"result = {prompt!r}\n",
        "a 10 mm cube": "import cadquery as cq\nresult = cq.Workplane().box(10, 10, 10)\n",
    }


def image_problems(task: dict[str, Any], base: Path) -> list[str]:
    """What is wrong with an image task's pictures (paths relative to the task file)."""
    images = task.get("images")
    if images is None:
        return []
    if not isinstance(images, list) or not images or not all(isinstance(i, str) for i in images):
        return ["images must be a non-empty list of picture paths"]
    from PIL import Image, UnidentifiedImageError

    problems = []
    for name in images:
        path = base / name
        if not path.is_file():
            problems.append(f"picture {name} is missing")
            continue
        try:
            with Image.open(path) as picture:
                picture.verify()
            with Image.open(path) as picture:
                width, height = picture.size
        except (UnidentifiedImageError, OSError, SyntaxError) as exc:
            problems.append(f"picture {name} does not decode: {exc}")
            continue
        if min(width, height) < 16 or max(width, height) > 4096:
            problems.append(f"picture {name} is {width}x{height}: too small or too large to read")
    return problems


def audit_task(task: dict[str, Any], line: int, base: Path, pool: Any, limits: Any) -> Verdict:
    """Check one well-formed task: its pictures decode, its reference passes, every trivial
    program fails."""
    verdict = Verdict(str(task["id"]), line)
    verdict.reasons.extend(image_problems(task, base))
    try:
        judge = task_judge(task, base, pool, limits)
    except ValueError as exc:
        verdict.reasons.append(str(exc))
        return verdict
    reference = judge(_reference_source(task, base))
    if not reference.valid:
        why = reference.error.message if reference.error else "invalid"
        verdict.reasons.append(f"the reference fails its own checks: {why}")
    for label, program in trivial_programs(task).items():
        report = judge(program)
        if report.valid:
            verdict.reasons.append(f"a trivial program passes ({label}): the checks are too weak")
    return verdict


def _reference_source(task: dict[str, Any], base: Path) -> str:
    reference = str(task.get("reference") or "")
    candidate = base / reference
    if reference.endswith(".py") and "\n" not in reference and candidate.is_file():
        return candidate.read_text()
    return reference


def task_judge(
    task: dict[str, Any], base: Path, pool: Any, limits: Any, partial_credit: bool = False
) -> Any:
    """A function program -> Report with the task's own checks (and its reference shape).

    `partial_credit` scores code by the share of tests passed instead of all or nothing (RL).
    """
    if task["domain"] == "code":
        from validators.code.validate import validate_code

        def judge_code(program: str) -> Report:
            return validate_code(
                program,
                pool,
                tests=task["tests"],
                entry_point=task["entry_point"],
                context=str(task.get("context") or ""),  # trusted helpers the tests may use
                partial_credit=partial_credit,
                limits=limits,
                time_budget_s=task.get("time_budget_s"),
            )

        return judge_code
    from validators.cad.validate import (
        CadOptions,
        ReferenceLoadError,
        load_reference,
        validate_cad,
    )

    reference_mesh = None
    reference = str(task.get("reference") or "")
    if reference:
        path = base / reference
        if "\n" not in reference and path.suffix in (".py", ".step", ".stp", ".stl"):
            try:
                reference_mesh = load_reference(path, pool, limits)
            except ReferenceLoadError as exc:
                raise ValueError(f"the reference cannot be loaded: {exc}") from exc
        else:
            from validators.cad.mesh import combine, decode_mesh

            result = pool.run("cad", reference, {"check_self_intersection": False}, limits)
            if not result.ok or not result.payload or "parts" not in result.payload:
                message = (result.error or {}).get("message") or "it built no shape"
                raise ValueError(f"the reference program does not run: {message}")
            reference_mesh = combine([decode_mesh(p.get("mesh")) for p in result.payload["parts"]])
    options = CadOptions(printability=False, physics=task["domain"] == "scene")
    from genservice.generation.asked import task_items

    request = task_items(task)

    def judge_cad(program: str) -> Report:
        return validate_cad(
            program,
            pool,
            spec=task.get("spec"),
            reference=reference_mesh,
            limits=limits,
            options=options,
            domain=task["domain"],
            request=request,
        )

    return judge_cad
