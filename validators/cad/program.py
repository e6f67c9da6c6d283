"""A script's parameters: top-level constant assignments, found by AST and overridable at run time.

As in cadquery's cqgi: `thickness = 8.0` at module level is a parameter; an override replaces
the constant in the syntax tree, so every line number of the script stays the same.
"""

from __future__ import annotations

import ast
import math
import re
from dataclasses import dataclass
from types import CodeType
from typing import Any

from validators.python_source import compile_tree
from validators.python_source import parse as parse_python

ParamValue = bool | int | float | str
PROGRAM_FILENAME = "<program>"  # the name tracebacks give the script (see sandbox/guest/harness)
# The names a script finds set when it runs, besides the builtins (guest.py execute_script).
SCRIPT_GLOBALS = frozenset({"__name__", "show_object", "debug", "log"})


class ProgramError(Exception):
    """The program cannot be run as asked: a syntax error or a bad parameter override."""

    def __init__(self, kind: str, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.kind, self.message, self.line = kind, message, line


@dataclass(frozen=True)
class Parameter:
    """One parameter: its name, value, type name and line."""

    name: str
    value: ParamValue
    type: str
    line: int


def _constant(node: ast.expr) -> ParamValue | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, bool | int | float | str):
        return node.value
    if (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, ast.USub | ast.UAdd)
        and isinstance(node.operand, ast.Constant)
        and isinstance(node.operand.value, int | float)
        and not isinstance(node.operand.value, bool)
    ):
        value = node.operand.value
        return -value if isinstance(node.op, ast.USub) else value
    return None


def parse(source: str) -> ast.Module:
    """Parse a script, turning any failure into a ProgramError with the line."""
    try:
        return parse_python(source, filename=PROGRAM_FILENAME)
    except SyntaxError as exc:
        raise ProgramError("syntax", f"SyntaxError: {exc.msg}", exc.lineno) from exc
    except (ValueError, RecursionError, MemoryError) as exc:
        raise ProgramError("syntax", f"the script cannot be parsed: {exc}") from exc


def find_parameters(tree: ast.Module) -> dict[str, Parameter]:
    """Top-level `NAME = constant` assignments (the last one wins, as when the script runs)."""
    found: dict[str, Parameter] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value_node = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value_node = node.target, node.value
        else:
            continue
        value = _constant(value_node)
        if isinstance(target, ast.Name) and value is not None and target.id != "result":
            found[target.id] = Parameter(target.id, value, type(value).__name__, node.lineno)
    return found


def coerce(parameter: Parameter, raw: Any) -> ParamValue:
    """Convert an override (a string from the CLI, or a JSON value) to the parameter's type."""
    try:
        if parameter.type == "bool":
            if isinstance(raw, str):
                lowered = raw.strip().lower()
                if lowered not in ("true", "false", "1", "0", "yes", "no"):
                    raise ValueError(raw)
                return lowered in ("true", "1", "yes")
            return bool(raw)
        if parameter.type == "int":
            if isinstance(raw, int) and not isinstance(raw, bool):
                return raw
            text = str(raw).strip()
            if text.lstrip("+-").isdigit():
                return int(text)  # exact, however large
            number = float(text)
            if not number.is_integer():
                raise ValueError(raw)
            return int(number)
        if parameter.type == "float":
            value = float(raw)
            if not math.isfinite(value):
                raise ProgramError(
                    "parameter",
                    f"parameter {parameter.name} must be a finite number, got {raw!r}",
                    parameter.line,
                )
            return value
        return str(raw)
    except (TypeError, ValueError) as exc:
        raise ProgramError(
            "parameter",
            f"parameter {parameter.name} expects a {parameter.type}, got {raw!r}",
            parameter.line,
        ) from exc


def resolve_parameters(
    source: str, overrides: dict[str, Any]
) -> tuple[dict[str, ParamValue], dict[str, Parameter]]:
    """Checked override values, and every parameter with its effective value."""
    parameters = find_parameters(parse(source))
    unknown = sorted(set(overrides) - set(parameters))
    if unknown:
        known = ", ".join(sorted(parameters)) or "none"
        raise ProgramError(
            "parameter", f"unknown parameter(s) {', '.join(unknown)}; this script has: {known}"
        )
    values = {name: coerce(parameters[name], raw) for name, raw in overrides.items()}
    for name, value in values.items():
        old = parameters[name]
        parameters[name] = Parameter(name, value, old.type, old.line)
    return values, parameters


def apply_parameters(source: str, overrides: dict[str, Any]) -> str:
    """The script's text with the overridden parameters written into their assignments.

    What a person (or a model asked to edit it) should see: the program as it is run.
    """
    if not overrides:
        return source
    values, parameters = resolve_parameters(source, overrides)
    lines = source.splitlines(keepends=True)
    for name, value in values.items():
        line = parameters[name].line - 1
        pattern = rf"^(\s*{re.escape(name)}\s*(?::[^=]+)?=\s*)([^#\n]+?)(\s*(#.*)?)$"
        replacement = rf"\g<1>{_escape(repr(value))}\g<3>"
        lines[line] = re.sub(pattern, replacement, lines[line])
    return "".join(lines)


def _escape(text: str) -> str:
    """Text as a literal in an re.sub replacement."""
    return text.replace("\\", "\\\\")


def compile_program(source: str, values: dict[str, ParamValue]) -> CodeType:
    """Compile the script with parameter values substituted, keeping the source's line numbers."""
    tree = parse_python(source, filename=PROGRAM_FILENAME)
    if values:
        for node in tree.body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target = node.targets[0]
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                target = node.target
            else:
                continue
            # Only constant assignments are parameters; `x = x + 1` keeps its meaning.
            if (
                isinstance(target, ast.Name)
                and target.id in values
                and node.value is not None
                and _constant(node.value) is not None
            ):
                node.value = ast.copy_location(ast.Constant(values[target.id]), node)
    return compile_tree(tree, PROGRAM_FILENAME)


def parameters_json(parameters: dict[str, Parameter]) -> dict[str, Any]:
    """Parameters as listed in a Report: value, type and line."""
    return {p.name: {"value": p.value, "type": p.type, "line": p.line} for p in parameters.values()}
