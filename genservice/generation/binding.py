"""A stated number goes into the parameter its words name: binding a candidate to its request.

A small model often writes the right program with a wrong number in a named parameter: the
corner radius it usually sees (`corner_r = 6.0` for "rounded corners (r = 3)"), a width taken
from the next phrase (`width = 14.0` for "18mm wide ... a 14 screw tab"), four dividers for "one
divider". The program is parametric, so the fix is the user's own move in the editor: set the
parameter. Binding does it for every candidate of a new CAD or scene request before validation,
where the request leaves no doubt:

- the words around the number name one parameter best (stems in common, the words after the
  number weighing three times those before: "18 mm wide" is `width`, "r = 3" `corner_r`; a tie
  goes to the noun the phrase ends in, then to the name the words cover most);
- the form of the number fits the parameter's type: a count (a number word, "8x", "4 Ø3.5
  holes") an int parameter, a measure (a unit, a decimal, an M-size) a float one, an angle
  ("45°", "90 degrees") only a parameter named for an angle;
- a size of the whole ("overall length 68", "total height") goes only into a parameter named
  by its words alone (`height`) or for the whole, never into a feature's (`ear_length`);
- of several numbers that claim one parameter, the one its words name most strongly wins;
- a parameter that holds a number the request names it by stays, and a number that other
  parameters keep is not taken from them (two parameters may swap numbers);
- "a 4 x 3 grid" gives columns and rows, and a count whose words name no parameter goes to the
  program's only count parameter;
- the request's only run of sizes ("a 40 x 38 seat") gives length and width, or width and depth,
  unless the program holds those two already in either order.

Anything less certain is left to the model. An edit is bound only when its instruction sets
one measure outright ("make it 32 mm thick", "change the bore to 12 mm"). One that changes it
relative to the previous program ("2 mm thicker", "add 2 holes", "twice as long", "by 10 %") is
left as the model wrote it ("add 2 holes" is not `bolt_count = 2`), and so is one that states
several numbers ("the height to 26.4 mm and diameter 51.8 mm") or a bare one ("the screws to
7", "bore -> 17"): their clauses name a parameter less surely than a request's phrases
(`python -m bench.edit_binding`). Code is never bound.
"""

from __future__ import annotations

import re

from genservice.generation.mend import mend_names
from genservice.generation.stated import (
    StatedNumber,
    chained_sizes,
    grid_counts,
    name_stems,
    shared,
    stated_numbers,
    stems,
)
from genservice.generation.wording import owned_by_the_whole
from validators.cad.program import Parameter, ProgramError, apply_parameters, find_parameters, parse

_WHOLE = frozenset({"over", "tota"})  # "overall", "total": a size of the whole part
# The stems of the words that name an axis of a size ("35 wide", "thickness 5", "dia 20").
_AXES = frozenset({"leng", "widt", "heig", "dept", "thic", "diam", "radi"})
AFTER_WEIGHT = 3  # "18 mm wide": the words after a number name it more often than those before
# Words that make an edit's number a change to the previous program rather than a value: a
# comparative ("thicker", "more"), a step ("by 5", "add", "another") or a ratio ("twice", "%").
_RELATIVE = re.compile(
    r"\b(?:(?:thick|thinn|wid|narrow|long|short|tall|high|low|deep|shallow|bigg|larg|small|"
    r"great|broad|slimm|fatt|heavi|light|tight|loos|clos|furth|farth)er|"
    r"more|less|fewer|by|add|adds|adding|extra|another|remove|drop|increase|"
    r"decrease|reduce|raise|lower|grow|shrink|double|triple|twice|thrice|half|halve|times|plus|"
    r"minus|up|down|again)\b|[%+±]|\bx\s*\d",
    re.IGNORECASE,
)


def bind_candidates(
    programs: list[str],
    domain: str,
    request: str,
    previous_program: str | None = None,
    look_alike: str | None = None,
    instruction: str | None = None,
) -> list[str]:
    """The candidates of a CAD or scene request, each with its slips of names mended (mend.py:
    from the program being edited, or the look-alike the model was shown with a picture) and
    bound to the numbers its words state: a new request's, or an edit's `instruction` when it
    sets one value outright (sets_one_value); code as it is."""
    if domain == "code":
        return programs
    shown = previous_program if previous_program is not None else look_alike
    mended = [mend_names(program, shown) for program in programs]
    if previous_program is not None:
        if instruction is None or not sets_one_value(instruction):
            return mended
        return [bind_stated_numbers(program, instruction, edit=True) for program in mended]
    return [bind_stated_numbers(program, request) for program in mended]


def sets_one_value(instruction: str) -> bool:
    """Whether an edit's instruction states one number outright ("make it 32 mm thick"), not as
    a change relative to the previous program ("2 mm thicker", "add 2 holes")."""
    return len(stated_numbers(instruction)) == 1 and _RELATIVE.search(instruction) is None


def bind_stated_numbers(program: str, request: str, edit: bool = False) -> str:
    """The program with each number the request states written into the parameter its words
    name, where that is certain (see the module's rules); unchanged if nothing is. Of an
    `edit`'s instruction only measures and angles are bound ("32 mm thick", "4.8 thick"): a
    bare number there names its parameter too loosely ("the screws to 7": how many, or how
    big?), and is left to the model."""
    try:
        parameters = {
            name: p
            for name, p in find_parameters(parse(program)).items()
            if p.type in ("int", "float")
        }
    except ProgramError:
        return program
    claimed = _grid(request, parameters) | _chained(request, parameters)
    stated = stated_numbers(request)
    if edit:
        stated = [n for n in stated if n.form in ("measure", "angle")]
    whole = {i for i, owned in enumerate(owned_by_the_whole(request)) if owned}
    overrides = bindings(stated, parameters, claimed, whole, _run_held(request, parameters))
    if not overrides:
        return program
    try:
        return apply_parameters(program, overrides)
    except ProgramError:
        return program


def kept_where_stated(program: str, request: str) -> set[str]:
    """The parameters that hold a number the request states where its words put it: words
    that name the parameter, or name none of the program's (`thickness = 6` for "6 thick";
    not for "6 bore", whose words name `bore_d`). Fitting leaves these alone."""
    try:
        parameters = {
            n: p for n, p in find_parameters(parse(program)).items() if p.type in ("int", "float")
        }
    except ProgramError:
        return set()
    stated = stated_numbers(request)
    return {
        name
        for name, parameter in parameters.items()
        if any(
            number.value == float(parameter.value)
            and _where_its_words_put(number, name, parameters)
            for number in stated
        )
    }


def _where_its_words_put(number: StatedNumber, name: str, parameters: dict[str, Parameter]) -> bool:
    """Whether a stated number belongs in the parameter as far as its words say: it fits the
    parameter and its words name it, or name no other parameter it fits."""
    return _fits(number, parameters[name]) and (
        _score(number, name) > 0
        or not any(
            _score(number, other) > 0 and _fits(number, p)
            for other, p in parameters.items()
            if other != name
        )
    )


def bindings(
    stated: list[StatedNumber],
    parameters: dict[str, Parameter],
    grid: dict[str, float] | None = None,
    whole: set[int] | None = None,
    run: set[tuple[str, float]] | frozenset[tuple[str, float]] = frozenset(),
) -> dict[str, int | float]:
    """The parameters to set, by name: those the stated numbers (and a stated grid's column
    and row counts, by parameter) claim with certainty; `whole` holds the indices of the
    stated numbers that the request's words make sizes of the whole part, `run` the
    (parameter, number) pairs the request's run of sizes gives ("100 by 100": `width`, 100)."""
    grid = grid or {}
    current = {name: float(p.value) for name, p in parameters.items()}
    claims: dict[str, dict[float, int]] = {}
    # Claims of a parameter named for an axis alone (`thickness`) by the axis word beside a
    # size of the whole ("thickness 5"): the request's own words for that size.
    by_axis: set[tuple[str, float]] = set()
    for counted, value in grid.items():
        claims[counted] = {value: AFTER_WEIGHT}
    for index, number in enumerate(stated):
        named = named_parameter(number, parameters) or _sole_count(number, stated, parameters)
        if named is not None:
            scores = claims.setdefault(named, {})
            scores[number.value] = max(scores.get(number.value, 0), _score(number, named))
            axis = name_stems(named)
            if index in (whole or set()) and axis <= _AXES and shared(number.beside, axis):
                by_axis.add((named, number.value))
    # Of several numbers that claim one parameter, the one its words name most strongly wins
    # ("8.5 dia holes" over "2 by 2 grid of ... dia"); a tie leaves it in doubt. A parameter
    # that holds a number the request names it by is already right ("d=115 ... ID 23":
    # `diameter = 115` stays).
    changes = {}
    for name, scores in claims.items():
        best = max(scores.values())
        top = [value for value, score in scores.items() if score == best]
        certain = len(top) == 1 and top[0] != current[name]
        if certain and not _named_holder(name, current[name], stated, parameters):
            changes[name] = top[0]

    def holders(name: str, value: float) -> list[str]:
        kind = parameters[name].type
        return [
            other
            for other, held in current.items()
            if other != name and held == value and parameters[other].type == kind
        ]

    def protected(name: str) -> bool:
        # Its value is a stated number whose words name it, or name no other parameter: "top
        # 90 by 50" leaves `width = 90` alone, but "18mm wide ... a 14 screw tab" takes 14
        # from `width`, and "38mm wide ... vertical leg 50mm" takes 50. A number whose words
        # name nothing gives way to a size of the whole that names the parameter's axis:
        # "a mounting panel 80 by 50, 6 mm thick" sets `thickness = 6` over the 50 there.
        by_its_axis = (name, settled.get(name)) in by_axis and (name, current[name]) not in run
        return any(
            number.value == current[name]
            and _where_its_words_put(number, name, parameters)
            and (_score(number, name) > 0 or not by_its_axis)
            for number in stated
        )

    def yields(name: str, value: float) -> bool:
        # Whether every other parameter of its kind that holds the number lets it go: one
        # that changes too, or (for a number named by its axis: "thickness 5") one whose
        # value no stated number's words claim for it (`bolt_circle_d = 5.0` by chance).
        return all(
            other in settled or ((name, value) in by_axis and not protected(other))
            for other in holders(name, value)
        )

    # Settle the changes together: a protected parameter changes only when its number moves to
    # another parameter that changes ("57 wide ... 66 long" for `length = 57`, `width = 66`),
    # and a number another parameter of its kind holds is taken only from one that changes.
    settled = dict(changes)
    while True:
        kept = {
            name: value
            for name, value in settled.items()
            if (not protected(name) or current[name] in settled.values()) and yields(name, value)
        }
        if kept == settled:
            break
        settled = kept
    return {name: _typed(value, parameters[name]) for name, value in settled.items()}


def named_parameter(stated: StatedNumber, parameters: dict[str, Parameter]) -> str | None:
    """The one parameter of the number's kind that its words name best (None when none or
    several tie)."""
    if shared(stated.before, _WHOLE):  # "overall length 68": the whole's, not `ear_length`
        parameters = {n: p for n, p in parameters.items() if _whole_named(stated, n)}
    scores = {name: _score(stated, name) for name, p in parameters.items() if _fits(stated, p)}
    # Bare digits count what follows them ("3 holes"); the words before name a measure
    # ("block 2 narrower" is not two blocks).
    if stated.form == "number":
        for name, score in scores.items():
            if parameters[name].type == "int" and score < AFTER_WEIGHT:
                scores[name] = 0
    best = max(scores.values(), default=0)
    top = [name for name, score in scores.items() if score == best]
    if best == 0:
        return None
    if len(top) > 1:  # "23 mm screw tab": the phrase is about the tab, not the screw
        headed = [name for name in top if shared(stated.head, name_stems(name))]
        top = headed if len(headed) == 1 else top
    if len(top) > 1:  # "M5 holes": `bolt_d` is named whole, `bolt_circle_d` only in part
        named = {name: _covered(stated, name) for name in top}
        most = max(named.values())
        top = [name for name in top if named[name] == most]
    return top[0] if len(top) == 1 else None


def _whole_named(stated: StatedNumber, name: str) -> bool:
    """Whether a parameter may hold a size of the whole: named for it (`overall_length`), or
    by nothing but the size's own words (`height` for "overall height 90")."""
    parts = name_stems(name)
    return shared(parts, _WHOLE) > 0 or shared(parts, stated.stems) == len(parts) > 0


def _covered(stated: StatedNumber, name: str) -> float:
    stems = name_stems(name)
    return shared(stems, stated.stems) / len(stems) if stems else 0.0


def _grid(request: str, parameters: dict[str, Parameter]) -> dict[str, float]:
    """ "a 4 x 3 grid" (columns by rows) for the program's column and row count parameters,
    when it has exactly one of each."""
    counts = grid_counts(request)
    if counts is None:
        return {}
    found = {}
    for stem, value in zip(("col", "row"), counts, strict=True):
        names = [
            n
            for n, p in parameters.items()
            if p.type == "int" and any(s.startswith(stem) for s in name_stems(n))
        ]
        if len(names) != 1:
            return {}
        found[names[0]] = value
    return found


# The sizes of "a 40 x 38 seat" in the order people write them, for a program that names them so.
_SIZE_ORDERS = (("length", "width"), ("width", "depth"))


def _chained(request: str, parameters: dict[str, Parameter]) -> dict[str, float]:
    """ "a 40 x 38 seat", "plate 120 x 60 x 6": the first two sizes of the request's only run of
    sizes for the program's length and width, or width and depth, when it has one such pair
    and that pair does not hold the two already, in either order (people write "21 by 85" and
    "85 by 21" for one leaf); where it holds one of them, only the other is set. A third size
    may be a thickness or an overall height: it is left to the words."""
    run = _size_run(request, parameters)
    if run is None:
        return {}
    sizes, (first, second) = run
    held = float(parameters[first].value), float(parameters[second].value)
    if sorted(held) == sorted(sizes):
        return {}
    # One of the two in place already, whichever way round: the other size goes to the other.
    for other, value in ((second, held[0]), (first, held[1])):
        if value in sizes and sizes[0] != sizes[1]:
            return {other: sizes[1] if value == sizes[0] else sizes[0]}
    return {first: sizes[0], second: sizes[1]}


def _run_held(request: str, parameters: dict[str, Parameter]) -> set[tuple[str, float]]:
    """The (parameter, number) pairs of the request's only run of sizes, for the program's
    length and width (or width and depth): "100 by 100" is theirs, whichever holds it."""
    run = _size_run(request, parameters)
    return set() if run is None else {(name, size) for name in run[1] for size in run[0]}


def _size_run(
    request: str, parameters: dict[str, Parameter]
) -> tuple[list[float], tuple[str, str]] | None:
    """The first two sizes of the request's only run of sizes and the program's one pair of
    float parameters they are written for (length and width, or width and depth); None when
    either is not one."""
    runs = chained_sizes(request)
    floats = {name for name, p in parameters.items() if p.type == "float"}
    orders = [order for order in _SIZE_ORDERS if set(order) <= floats]
    if len(runs) != 1 or len(orders) != 1:
        return None
    return runs[0][:2], orders[0]


def _sole_count(
    stated: StatedNumber, numbers: list[StatedNumber], parameters: dict[str, Parameter]
) -> str | None:
    """For a count whose words name no parameter ("twelve 3 mm scallops" in a knob with
    `grip_count`): the program's only count parameter, unless another stated count names it."""
    if stated.form != "count" or stated.written.lower() == "one":  # "one long edge"
        return None
    if any(shared(stems([stated.counted]), name_stems(name)) for name in parameters):
        return None  # "four 9 legs": the legs are `leg`'s, fixed in number
    counts = [name for name, p in parameters.items() if p.type == "int"]
    if len(counts) != 1:
        return None
    named = any(
        other is not stated and other.form == "count" and _score(other, counts[0]) > 0
        for other in numbers
    )
    return None if named else counts[0]


def _score(stated: StatedNumber, name: str) -> int:
    stems = name_stems(name)
    return AFTER_WEIGHT * shared(stated.after, stems) + shared(stated.before, stems)


def _named_holder(
    name: str, value: float, stated: list[StatedNumber], parameters: dict[str, Parameter]
) -> bool:
    """Whether the parameter's value is a stated number whose words name it."""
    return any(
        number.value == value and _fits(number, parameters[name]) and _score(number, name) > 0
        for number in stated
    )


def _fits(stated: StatedNumber, parameter: Parameter) -> bool:
    if stated.form == "angle":  # "45°" is never a size: only an angle's parameter takes it
        return shared(frozenset({"angl", "deg"}), name_stems(parameter.name)) > 0
    if stated.form in ("count", "things"):
        return parameter.type == "int"
    if stated.form == "measure":
        return parameter.type == "float"
    return parameter.type == "float" or stated.value.is_integer()


def _typed(value: float, parameter: Parameter) -> int | float:
    return int(value) if parameter.type == "int" else float(value)
