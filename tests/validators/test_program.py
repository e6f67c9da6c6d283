"""Script parameters: discovery by AST, checked overrides, and line numbers that stay put."""

from __future__ import annotations

import math
import traceback
from types import CodeType

import pytest

from validators.cad.program import (
    PROGRAM_FILENAME,
    Parameter,
    ProgramError,
    compile_program,
    find_parameters,
    parameters_json,
    parse,
    resolve_parameters,
)
from validators.sandbox import SandboxPool

DISCOVERY = """\
width = 40.0
count = 4
through = True
label = "bracket"
offset = -2.5
lift = +3
depth: float = 12.0
steps: int = -7
result = 1.0
area = width * 2
total = 1 + 2
holes = [1, 2]
nothing = None
raw = b"bytes"
flip = -True
a, b = 1, 2
c = d = 5
spacing: float
def build():
    inner = 3.0
    return inner
class Holder:
    member = 1
if count:
    conditional = 2.0
for i in range(2):
    looped = 1
"""


def test_top_level_constants_are_parameters_with_type_and_line() -> None:
    found = find_parameters(parse(DISCOVERY))
    assert found == {
        "width": Parameter("width", 40.0, "float", 1),
        "count": Parameter("count", 4, "int", 2),
        "through": Parameter("through", True, "bool", 3),
        "label": Parameter("label", "bracket", "str", 4),
        "offset": Parameter("offset", -2.5, "float", 5),
        "lift": Parameter("lift", 3, "int", 6),
        "depth": Parameter("depth", 12.0, "float", 7),
        "steps": Parameter("steps", -7, "int", 8),
    }


def test_the_last_constant_assignment_wins() -> None:
    found = find_parameters(parse("size = 1\nother = 2\nsize = 2.5\n"))
    assert found["size"] == Parameter("size", 2.5, "float", 3)


def test_parameters_json_lists_value_type_and_line() -> None:
    _, found = resolve_parameters("t = 8.0\nn = 3\n", {"n": "5"})
    assert parameters_json(found) == {
        "t": {"value": 8.0, "type": "float", "line": 1},
        "n": {"value": 5, "type": "int", "line": 2},
    }


def _line_of_failure(code: CodeType) -> int | None:
    namespace: dict = {}
    with pytest.raises(ZeroDivisionError) as info:
        exec(code, namespace)
    frames = [
        f for f in traceback.extract_tb(info.value.__traceback__) if f.filename == PROGRAM_FILENAME
    ]
    assert frames, "the traceback does not name the program"
    return frames[-1].lineno


# A multi-line constant above the failing line: replacing it by a one-line value must not shift
# the line numbers that follow.
LINES = '''\
note = """first
second
third"""
width = 4.0
half = width / 2
broken = half / 0
'''


def test_overrides_keep_the_line_numbers_of_the_source() -> None:
    values, _ = resolve_parameters(LINES, {"note": "short", "width": "10"})
    assert values == {"note": "short", "width": 10.0}
    assert _line_of_failure(compile_program(LINES, {})) == 6
    assert _line_of_failure(compile_program(LINES, values)) == 6


def test_override_values_are_what_the_script_sees() -> None:
    namespace: dict = {}
    exec(
        compile_program(
            "width = 4.0\nhalf = width / 2\nlabel: str = 'a'\n", {"width": 10.0, "label": "b"}
        ),
        namespace,
    )
    assert (namespace["width"], namespace["half"], namespace["label"]) == (10.0, 5.0, "b")


def test_runtime_error_after_an_override_reports_the_source_line_in_the_sandbox(
    pool: SandboxPool,
) -> None:
    from validators.cad.validate import validate_cad

    report = validate_cad(LINES, pool, parameters={"note": "x", "width": 3})
    assert not report.valid
    assert report.error is not None
    assert (report.error.kind, report.error.line) == ("exception", 6)
    assert "ZeroDivisionError" in report.error.message
    assert report.parameters["width"] == {"value": 3.0, "type": "float", "line": 4}


@pytest.mark.parametrize(
    ("source", "raw", "expected"),
    [
        ("v = 1.5\n", "2.25", 2.25),
        ("v = 1.5\n", 3, 3.0),
        ("v = 1\n", "7", 7),
        ("v = 1\n", "7.0", 7),
        ("v = 1\n", " -3 ", -3),
        ("v = True\n", "no", False),
        ("v = False\n", "YES", True),
        ("v = False\n", "1", True),
        ("v = 'a'\n", "12", "12"),
    ],
)
def test_overrides_are_coerced_to_the_parameter_type(
    source: str, raw: object, expected: object
) -> None:
    values, found = resolve_parameters(source, {"v": raw})
    assert values["v"] == expected
    assert type(values["v"]) is type(expected)
    assert found["v"].value == expected


@pytest.mark.parametrize(
    ("source", "raw"),
    [
        ("v = 1\n", "2.5"),
        ("v = 1\n", "ten"),
        ("v = 1.0\n", "wide"),
        ("v = True\n", "maybe"),
        ("v = 1.0\n", None),
    ],
)
def test_an_override_of_the_wrong_type_is_a_parameter_error(source: str, raw: object) -> None:
    with pytest.raises(ProgramError) as info:
        resolve_parameters("# header\n" + source, {"v": raw})
    assert info.value.kind == "parameter"
    assert info.value.line == 2
    assert "v" in info.value.message


@pytest.mark.parametrize(
    ("source", "raw"),
    [
        ("v = 1.0\n", "nan"),
        ("v = 1.0\n", "inf"),
        ("v = 1.0\n", "-inf"),
        ("v = 1.0\n", math.nan),
        ("v = 1.0\n", math.inf),
        ("v = 1\n", "nan"),
        ("v = 1\n", "inf"),
    ],
)
def test_non_finite_numbers_are_rejected(source: str, raw: object) -> None:
    with pytest.raises(ProgramError) as info:
        resolve_parameters(source, {"v": raw})
    assert info.value.kind == "parameter"


def test_unknown_parameters_are_listed_with_the_known_ones() -> None:
    with pytest.raises(ProgramError) as info:
        resolve_parameters("width = 1.0\nheight = 2.0\n", {"zeta": 1, "alpha": 2, "width": 3})
    assert info.value.kind == "parameter"
    assert "alpha, zeta" in info.value.message
    assert "height, width" in info.value.message


def test_result_cannot_be_overridden() -> None:
    with pytest.raises(ProgramError, match="unknown parameter"):
        resolve_parameters("result = 1.0\n", {"result": "2"})


@pytest.mark.parametrize(
    ("source", "line"),
    [("width = 1.0\nif width\n    pass\n", 2), ("a = 1\nb = 2\nc = (\n", 3), ("x = = 1\n", 1)],
)
def test_syntax_errors_give_kind_syntax_and_the_line(source: str, line: int) -> None:
    for call in (lambda: parse(source), lambda: resolve_parameters(source, {})):
        with pytest.raises(ProgramError) as info:
            call()
        assert info.value.kind == "syntax"
        assert info.value.line == line
        assert info.value.message.startswith("SyntaxError")


def test_a_source_that_cannot_be_parsed_at_all_is_a_syntax_error() -> None:
    with pytest.raises(ProgramError) as info:
        parse("x = 1\n\0\n")
    assert info.value.kind == "syntax"
