"""What every task family provides, and how a family's sample becomes a task (a JSONL row).

A family draws parameters from a seeded `random.Random`, writes the reference program (idiomatic
parametric CadQuery with named top-level parameters, or a tested Python function), a prompt as a
person would write it, and a spec. The split comes from hashing the family and its parameters,
so the same part never lands in two splits; families marked held-out form the "ood" split (a
family may instead have a `split_rule`, as compositional.py does).

Task row (DESIGN.md): id, domain (cad|scene|code), prompt, spec?, reference, tests?,
entry_point?, family, split.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

SPLITS = ("train", "val", "test")
# Shares of in-distribution tasks per split, by parameter hash.
SPLIT_SHARES = {"train": 0.8, "val": 0.1, "test": 0.1}


@dataclass(frozen=True)
class Sample:
    """One drawn task of a family, before it gets its id and split."""

    prompt: str
    reference: str
    params: dict[str, Any]
    spec: dict[str, Any] | None = None
    tests: str | None = None
    entry_point: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class Family(Protocol):
    """A task family: a name, a domain, whether it is held out, and a sampler."""

    name: str
    domain: str  # "cad", "scene" or "code"
    held_out: bool

    def sample(self, rng: random.Random) -> Sample:
        """Draw parameters and write the prompt, reference program, spec (and tests)."""
        ...


def read_task_rows(source: Path) -> list[dict[str, Any]]:
    """The task rows of a JSONL file (blank lines skipped); ValueError naming the line that is
    not JSON."""
    rows = []
    with source.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise ValueError(f"{source}:{number}: not a JSON task row ({exc.msg})") from exc
    return rows


def params_key(family: str, params: dict[str, Any]) -> str:
    """A stable hash of a family's parameters (rounded floats), for splits and dedup."""
    canonical = json.dumps(
        {k: round(v, 6) if isinstance(v, float) else v for k, v in sorted(params.items())},
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(f"{family}|{canonical}".encode()).hexdigest()


def split_of(family: Family, params: dict[str, Any]) -> str:
    """'ood' for held-out families, else train/val/test by parameter hash.

    A family with a `split_rule(params)` method decides its own splits (compositional.py holds
    out whole compositions and names that way).
    """
    rule = getattr(family, "split_rule", None)
    if rule is not None:
        return str(rule(params))
    if family.held_out:
        return "ood"
    unit = int(params_key(family.name, params)[:8], 16) / 0xFFFFFFFF
    cumulative = 0.0
    for split in SPLITS:
        cumulative += SPLIT_SHARES[split]
        if unit < cumulative:
            return split
    return SPLITS[-1]


def to_task(family: Family, sample: Sample) -> dict[str, Any]:
    """The JSONL row for a sample."""
    key = params_key(family.name, sample.params)
    task: dict[str, Any] = {
        "id": f"{family.name}-{key[:12]}",
        "domain": family.domain,
        "family": family.name,
        "split": split_of(family, sample.params),
        "prompt": sample.prompt,
        "reference": sample.reference,
        "params": sample.params,
    }
    if sample.spec is not None:
        task["spec"] = sample.spec
    if sample.tests is not None:
        task["tests"] = sample.tests
        task["entry_point"] = sample.entry_point
    task.update(sample.extra)
    return task
