"""Slips of names mended before validation: a parameter under another name, a number the body
reads from the program it was shown, a module it uses without importing.

A small model sometimes writes a parameter block and a body that disagree on names. A person
fixing it in the editor makes the smallest change that leaves no doubt; mending does the same,
in this order, each step only where the program says what is meant:

- **A module used but never imported.** The body calls `math.cos` and nothing imports `math`
  ("NameError: name 'math' is not defined"): `import math` is added after the imports. Only the
  standard modules part scripts import (MODULES).
- **A parameter renamed.** Exactly one name is read and never bound anywhere in the program
  (not a builtin or a name the sandbox gives every script such as `show_object`, not imported,
  not assigned, not a loop variable, argument or function), and exactly one top-level numeric
  parameter is set and never read: the block sets `length = 15.0`, the body extrudes by
  `thickness`. Then the two are one number under two names, and the parameter takes the name
  the body reads (its assignments renamed through the syntax tree, nothing else touched).
- **A number taken from the program it was shown.** A request with a picture shows the model a
  look-alike's program, and an edit shows it the program being edited; the model often keeps
  that program's body and writes its own parameter block, leaving out a parameter the body
  reads (`corner_r`, `wall`). A name the body reads that nothing binds, and that the shown
  program sets as a top-level number, is set to that number at the end of the program's
  parameter block. Then the rename above is tried again (one name may remain, with one unread
  parameter for it).
- **A count written as a whole float**, last (it may be a number just taken from the
  program shown). A top-level parameter set to a whole number written as
  a float (`hole_count = 11.0`) and handed, as it is, where only an int will do (`range`, a
  count of CadQuery's `rarray`, `polarArray` or `polygon`): "TypeError: 'float' object cannot
  be interpreted as an integer". It is written as the int (`hole_count = 11`).

Anything less certain (two unknown names, two unread parameters and nothing shown that sets
them, `global`, star imports, `exec`) is left to validation, whose error the repair round feeds
back to the model.
"""

from __future__ import annotations

import ast
import builtins

from validators.cad.program import SCRIPT_GLOBALS, ProgramError, find_parameters, parse

_GIVEN = frozenset(dir(builtins)) | SCRIPT_GLOBALS  # set before the script's first line
MODULES = frozenset({"math"})  # standard modules part scripts import (the corpus uses only math)


def mend_names(program: str, shown: str | None = None) -> str:
    """The program with its slips of names mended where it leaves no doubt (see the module's
    rules); `shown` is the program the model was shown (a look-alike, or the program being
    edited), whose numbers may fill a parameter the body reads. Unchanged otherwise."""
    mended = _import_modules(program)
    renamed = _rename_slip(mended)
    if renamed == mended and shown:
        renamed = _rename_slip(_borrow_parameters(mended, shown))
    return _whole_counts(renamed)  # last: a count may be one borrowed from the program shown


def _unbound(program: str) -> tuple[ast.Module, set[str], set[str]] | None:
    """The program's tree, the names it reads but never binds, and the names it reads; None
    when it does not parse or may bind names the tree does not show."""
    try:
        tree = parse(program)
    except ProgramError:
        return None
    if _dynamic(tree):
        return None
    bound, read = _names(tree)
    return tree, read - bound - _GIVEN, read


def _import_modules(program: str) -> str:
    """The program with `import M` added for each standard module (MODULES) it reads but
    never imports."""
    found = _unbound(program)
    if found is None:
        return program
    tree, unbound, _ = found
    missing = sorted(unbound & MODULES)
    if not missing:
        return program
    leading = _end_of_leading_block(tree)  # an import further down may come after a use
    imports = [node for node in tree.body if isinstance(node, ast.Import | ast.ImportFrom)]
    after = max((n.end_lineno or n.lineno for n in imports if n.lineno <= leading), default=0)
    return _insert_lines(program, after, [f"import {module}" for module in missing])


# Where a count must be an int: the call's name, its positions and keywords that take one.
_COUNTS = {
    "range": (frozenset({0, 1, 2}), frozenset()),
    "rarray": (frozenset({2, 3}), frozenset({"xCount", "yCount"})),
    "polarArray": (frozenset({3}), frozenset({"count"})),
    "polygon": (frozenset({0}), frozenset({"nSides"})),
}


def _whole_counts(program: str) -> str:
    """The program with each top-level parameter set to a whole float and passed bare where
    only an int will do (_COUNTS) written as that int."""
    try:
        tree = parse(program)
    except ProgramError:
        return program
    whole = {  # name: the float constant it is set to, at the top level
        node.targets[0].id: node.value
        for node in tree.body
        if isinstance(node, ast.Assign) and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name) and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, float) and node.value.value.is_integer()
    }  # fmt: skip
    counts: set[str] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
        if name not in _COUNTS:
            continue
        positions, keywords = _COUNTS[name]
        given = [arg for i, arg in enumerate(node.args) if i in positions]
        given += [k.value for k in node.keywords if k.arg in keywords]
        counts |= {arg.id for arg in given if isinstance(arg, ast.Name) and arg.id in whole}
    if not counts or _dynamic(tree):
        return program
    lines = program.splitlines(keepends=True)
    for name in counts:
        value = whole[name]
        line = lines[value.lineno - 1].encode()
        start, end = value.col_offset, value.end_col_offset
        if value.end_lineno != value.lineno or end is None:
            continue
        number = value.value
        if not isinstance(number, float):
            continue
        text = str(int(number)).encode()
        lines[value.lineno - 1] = (line[:start] + text + line[end:]).decode()
    return "".join(lines)


def _rename_slip(program: str) -> str:
    """The program with its one unread numeric parameter renamed to its one unbound name,
    when it has exactly one of each."""
    found = _unbound(program)
    if found is None:
        return program
    tree, unbound, read = found
    unread = [
        name
        for name, p in find_parameters(tree).items()
        if p.type in ("int", "float") and name not in read
    ]
    if len(unbound) != 1 or len(unread) != 1:
        return program
    return _rename(program, tree, unread[0], next(iter(unbound)))


def _borrow_parameters(program: str, shown: str) -> str:
    """The program with each name it reads but never binds, and that `shown` sets as a
    top-level number, set to that number after its own last leading parameter."""
    found = _unbound(program)
    if found is None:
        return program
    tree, unbound, _ = found
    try:
        offered = find_parameters(parse(shown))
    except ProgramError:
        return program
    lines = [
        f"{name} = {offered[name].value!r}"
        for name in sorted(unbound)
        if name in offered and offered[name].type in ("int", "float")
    ]
    if not lines:
        return program
    return _insert_lines(program, _end_of_leading_block(tree), lines)


def _end_of_leading_block(tree: ast.Module) -> int:
    """The last line of the program's opening run of imports, docstring and `NAME = number`
    parameters: a line added after it is set before the body reads anything."""
    parameters = {p.line for p in find_parameters(tree).values()}
    end = 0
    for node in tree.body:
        leading = (
            isinstance(node, ast.Import | ast.ImportFrom)
            or node.lineno in parameters
            or (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant))
        )
        if not leading:
            break
        end = node.end_lineno or node.lineno
    return end


def _insert_lines(program: str, after: int, new: list[str]) -> str:
    """The program with `new` lines inserted after its line `after` (0: at the top)."""
    lines = program.splitlines(keepends=True)
    if after and not lines[after - 1].endswith("\n"):
        lines[after - 1] += "\n"
    return "".join(lines[:after] + [line + "\n" for line in new] + lines[after:])


def _dynamic(tree: ast.Module) -> bool:
    """Whether names may come from where the tree does not show: global, star imports, exec."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Global | ast.Nonlocal):
            return True
        if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
            return True
        if isinstance(node, ast.Name) and node.id in ("exec", "eval", "globals", "locals"):
            return True
    return False


def _names(tree: ast.Module) -> tuple[set[str], set[str]]:
    """The names the program binds anywhere, and the names it reads."""
    bound: set[str] = set()
    read: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (read if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            bound |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.ExceptHandler | ast.MatchAs | ast.MatchStar) and node.name:
            bound.add(node.name)
    return bound, read


def _rename(program: str, tree: ast.Module, old: str, new: str) -> str:
    """The program with every assignment to `old` made to `new` (it is never read)."""
    spots = sorted(
        (node.lineno, node.col_offset, node.end_col_offset)
        for node in ast.walk(tree)
        if isinstance(node, ast.Name) and node.id == old
    )
    lines = program.splitlines(keepends=True)
    for lineno, start, end in reversed(spots):
        # col offsets count UTF-8 bytes; the line is edited as bytes so that they hold.
        line = lines[lineno - 1].encode()
        lines[lineno - 1] = (line[:start] + new.encode() + line[end:]).decode()
    return "".join(lines)
