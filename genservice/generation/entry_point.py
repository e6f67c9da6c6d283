"""Code candidates define the function the request names: where a reply must be steered.

A code request names its entry point (the function its tests call), and usually states its
signature ("implement `dedupe(names)` so that ..."). A small model often writes the right body
under another name or with other argument names (`uniq(tokens)`), which fails every test. The
sampler (sampler.py) steers such a candidate: it keeps the reply up to the `def` that should have
been the entry point, writes the stated signature there (`def dedupe(names):` and a new line)
or, when the request states none, the name alone, and lets the model go on from that point. The
body stays the model's own, now conditioned on the right signature.

The `def` replaced is the candidate's top-level `def` of the entry point if it has one, else its
last top-level `def` (helpers come first and keep their names; the entry point is the last
function in every reference of the corpus). A reply with no `def` starts again from the
signature.
"""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass

_TOP_LEVEL_DEF = re.compile(r"^def[ \t]+([A-Za-z_]\w*)[ \t]*(?:\(([^()]*)\))?", re.MULTILINE)
_ARGUMENT = re.compile(r"\*{0,2}[A-Za-z_]\w*")


@dataclass(frozen=True)
class EntryPoint:
    """The function a code candidate must define: its name and, if stated, its arguments."""

    name: str
    arguments: str | None = None  # "items, size" as the request wrote it

    def __post_init__(self) -> None:
        check_entry_point(self.name)

    @classmethod
    def from_request(cls, prompt: str, name: str) -> EntryPoint:
        """The entry point `name`, with the arguments the prompt states for it (`name(a, b)`)."""
        check_entry_point(name)
        return cls(name, stated_arguments(prompt, name))

    def signature(self) -> str:
        """What steering writes: `def name(arguments):` and a new line, or `def name`."""
        if self.arguments is None:
            return f"def {self.name}"
        return f"def {self.name}({self.arguments}):\n"


def check_entry_point(name: str) -> str:
    """`name` if it is a Python identifier a function can have, else ValueError."""
    if not name.isidentifier() or keyword.iskeyword(name):
        raise ValueError(f"the entry point must be a Python function name, not {name!r}")
    return name


def stated_arguments(prompt: str, name: str) -> str | None:
    """The argument names the prompt gives `name` (`name(a, b)`), or None.

    A call with values (an example such as `name([1, 2], 3)`) is not a signature.
    """
    for match in re.finditer(rf"(?<![\w.]){re.escape(name)}\(([^()]*)\)", prompt):
        parts = [part.strip() for part in match.group(1).split(",")]
        if parts == [""]:
            return ""
        if all(_ARGUMENT.fullmatch(part) and not keyword.iskeyword(part) for part in parts):
            return ", ".join(parts)
    return None


def needs_steering(text: str, entry_point: EntryPoint) -> bool:
    """Whether a reply lacks a top-level `def` of the entry point (with its stated arguments)."""
    for match in _TOP_LEVEL_DEF.finditer(text):
        if match.group(1) != entry_point.name:
            continue
        if entry_point.arguments is None or _same_arguments(match.group(2), entry_point.arguments):
            return False
    return True


def steered_prefix(text: str, entry_point: EntryPoint) -> str:
    """The reply up to the `def` to replace, followed by the entry point's signature."""
    matches = list(_TOP_LEVEL_DEF.finditer(text))
    own = [m for m in matches if m.group(1) == entry_point.name]
    target = own[-1] if own else matches[-1] if matches else None
    kept = text[: target.start()] if target is not None else ""
    return kept + entry_point.signature()


def ends_in_name(entry_point: EntryPoint) -> bool:
    """Whether the steered prefix ends in the bare name (the model writes the arguments)."""
    return entry_point.arguments is None


def continues_identifier(piece: str) -> bool:
    """Whether a token's text, written right after a name, would make the name longer."""
    return bool(piece) and (piece[0].isalnum() or piece[0] == "_")


def _same_arguments(written: str | None, stated: str) -> bool:
    if written is None:
        return False
    return [p.strip() for p in written.split(",") if p.strip()] == [
        p.strip() for p in stated.split(",") if p.strip()
    ]
