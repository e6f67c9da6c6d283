"""A fixed, varied set of CadQuery parts and assemblies for export tests and bench/export.py.

Revolves, lofts, sweeps, shells, fillets, holes, and coloured (nested) assemblies.
"""

from __future__ import annotations

from pathlib import Path

FOLDER = Path(__file__).parent


def sample_names() -> list[str]:
    """Names of the sample scripts (file stems)."""
    return sorted(p.stem for p in FOLDER.glob("*.py") if p.stem != "__init__")


def sample_source(name: str) -> str:
    """The source of one sample script."""
    return (FOLDER / f"{name}.py").read_text()
