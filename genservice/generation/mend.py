"""A parameter the body reads under another name: the one slip mended before validation.

A small model sometimes writes a parameter block and a body that disagree on one name: the
block sets `length = 15.0`, the body extrudes by `thickness`, which nothing sets, and the
program dies with "NameError: name 'thickness' is not defined". A person fixing it in the
editor renames the parameter. Mending does the same, where the program leaves no doubt:

- exactly one name is read and never bound anywhere in the program (not a builtin or a name
  the sandbox gives every script such as `show_object`, not imported, not assigned, not a loop
  variable, argument or function);
- exactly one top-level numeric parameter is set and never read.

Then the two are one number under two names, and the parameter takes the name the body reads
(its assignments renamed through the syntax tree, nothing else touched). Anything less certain
(two unknown names, two unread parameters, `global`, star imports, `exec`) is left to
validation, whose error the repair round feeds back to the model.
"""

from __future__ import annotations

import ast
import builtins

from validators.cad.program import SCRIPT_GLOBALS, ProgramError, find_parameters, parse

_GIVEN = frozenset(dir(builtins)) | SCRIPT_GLOBALS  # set before the script's first line


def mend_names(program: str) -> str:
    """The program with its one unread parameter renamed to its one unbound name when it has
    exactly one of each (see the module's rules); unchanged otherwise."""
    try:
        tree = parse(program)
    except ProgramError:
        return program
    if _dynamic(tree):
        return program
    bound, read = _names(tree)
    unbound = read - bound - _GIVEN
    unread = [
        name
        for name, p in find_parameters(tree).items()
        if p.type in ("int", "float") and name not in read
    ]
    if len(unbound) != 1 or len(unread) != 1:
        return program
    return _rename(program, tree, unread[0], next(iter(unbound)))


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
