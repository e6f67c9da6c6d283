"""The registry of task families: CAD parts, scenes and code tasks, looked up by name.

The family modules are imported on first use, and a module that is not there is skipped: asking
for all families gives those that exist; asking for a domain or a family whose module is
missing raises a `FamilyError` that says which module it needs. `ALL_FAMILIES` (module
attribute) is `all_families()`.

A family marked `opt_in` (compositional.py) is left out of "all families" and of a domain's
families unless asked for (`opt_in=True`), and found by name like any other: corpora, evaluation
sets and benchmarks built from the default families stay what they were.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any

from training.corpus.base import Family

# Module (under training.corpus) -> the domain its families belong to.
MODULES = {
    "cad_parts_a": "cad",
    "cad_parts_b": "cad",
    "scenes": "scene",
    "code_tasks": "code",
    "compositional": "cad",
    "furniture": "scene",
}
DOMAINS = ("cad", "scene", "code")


class FamilyError(LookupError):
    """An unknown family or domain, or one whose module is not available."""


def _load(module: str) -> list[Family] | None:
    """The FAMILIES of training.corpus.<module>, or None when the module does not exist."""
    qualified = f"training.corpus.{module}"
    try:
        loaded = importlib.import_module(qualified)
    except ModuleNotFoundError as exc:
        if exc.name == qualified:
            return None
        raise
    if not isinstance(getattr(loaded, "FAMILIES", None), list):
        raise FamilyError(f"{qualified} defines no FAMILIES list")
    families: list[Family] = list(loaded.FAMILIES)
    return families


def _modules(domains: list[str] | None) -> list[str]:
    if domains is not None:
        for domain in domains:
            if domain not in DOMAINS:
                raise FamilyError(f"unknown domain {domain!r}; known: {', '.join(DOMAINS)}")
    return [m for m, d in MODULES.items() if domains is None or d in domains]


def missing_modules() -> list[str]:
    """The family modules that do not exist (yet)."""
    return [m for m in MODULES if importlib.util.find_spec(f"training.corpus.{m}") is None]


def is_opt_in(family: Family) -> bool:
    """True for a family drawn only when asked for by name or share (compositional)."""
    return bool(getattr(family, "opt_in", False))


def all_families(domains: list[str] | None = None, opt_in: bool = False) -> list[Family]:
    """Every family of the modules that exist (of the given domains), in a fixed order;
    opt-in families only with `opt_in`."""
    families: list[Family] = []
    seen: dict[str, str] = {}
    for module in _modules(domains):
        for family in _load(module) or []:
            if family.name in seen:
                raise FamilyError(
                    f"family name {family.name!r} is used by both {seen[family.name]} and {module}"
                )
            seen[family.name] = module
            if opt_in or not is_opt_in(family):
                families.append(family)
    return families


def family_names(domains: list[str] | None = None) -> list[str]:
    """The names of all available families (of the given domains)."""
    return [family.name for family in all_families(domains)]


def get_family(name: str) -> Family:
    """The family called `name`; FamilyError if no available module has it.

    Modules are searched in order, so a module that fails to load only matters when the family
    is not found elsewhere.
    """
    known: list[str] = []
    problems: list[str] = []
    for module in MODULES:
        try:
            families = _load(module)
        except Exception as exc:  # someone else's module, half written: say so only if needed
            problems.append(f"{module}: {exc}")
            continue
        if families is None:
            problems.append(f"{module} is not available")
            continue
        for family in families:
            if family.name == name:
                return family
            known.append(family.name)
    note = f" ({'; '.join(problems)})" if problems else ""
    raise FamilyError(f"unknown family {name!r}; known: {', '.join(known)}{note}")


def families_for(domains: list[str] | None = None, names: list[str] | None = None) -> list[Family]:
    """The families of the given domains and/or names (all available ones when both are None).

    Raises FamilyError for an unknown domain or family name, and for a requested domain whose
    modules are all missing.
    """
    if names is not None:
        chosen = [get_family(name) for name in dict.fromkeys(names)]
        if domains is not None:
            _modules(domains)
            chosen = [f for f in chosen if f.domain in domains]
            if not chosen:
                raise FamilyError(f"none of the families {', '.join(names)} is in {domains}")
        return chosen
    families = all_families(domains)
    for domain in domains or []:
        if not any(f.domain == domain for f in families):
            wanted = " / ".join(f"training.corpus.{m}" for m in _modules([domain]))
            raise FamilyError(f"no families for domain {domain!r}: {wanted} is not available")
    return families


def __getattr__(name: str) -> Any:
    if name == "ALL_FAMILIES":
        return all_families()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
