"""Compositional CAD tasks: programs drawn from a grammar of sketches, solids and features.

In the spirit of CAD-Recode's procedurally generated programs, a draw composes a base solid
(grammar.py, grammar_solids.py: prisms of rectangles, rounded rectangles, circles, polygons and
slots; L/T/U/C profiles; split rings and arcs; revolved, lofted, swept and shelled solids) with
up to four features (holes of four kinds in corner, grid, row and bolt-circle arrays; pockets;
bosses; ribs; gussets; fillets and chamfers; mirrored ears; a swept handle). The reference is a
readable parametric program (named parameters at the top, millimetres, `result`), its spec the
exact bounding box and one solid, and its request is written from its structure: an everyday
name that fits the composition, the overall size with axis words ("80 mm long, 40 wide, 12
thick") and each feature, in many phrasings.

**Split rule** (`split_rule`, used by base.split_of): a row is "ood" when its composition holds
one of HELD_OUT_PAIRS (two tokens of its signature, e.g. a cup with a bolt circle of holes in
its floor) or its name's head noun is one of HELD_OUT_NAMES ("bushing", ...). Every token and
every other name appears in train, so "ood" measures how well a model composes what it knows.
Other rows split train/val/test 80/10/10 by the hash of their parameters, like every family.
The name is a function of the shape (drawn from a stream seeded by the shape's key), so the
same shape never has two names, nor two splits, and deduplication by parameters is by shape.

The family is opt-in (`opt_in`): `genservice corpus build` draws it only when named
(`--families compositional`) or given a share (`--compositional SHARE`), so corpora built
without it stay byte-for-byte what they were.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from training.corpus.base import SPLIT_SHARES, SPLITS, Family, Sample, params_key
from training.corpus.grammar import Draft
from training.corpus.grammar_bent import leaning_base, names_for_bent, swept_base
from training.corpus.grammar_bodies import loft_base, shell_base, turned_base
from training.corpus.grammar_flat import disc_base, obround_base, polygon_base, rect_base
from training.corpus.grammar_solids import profile_base, ring_base
from training.corpus.phrasing import length, number, pick, request

FAMILY = "compositional"
# Bases and how often each is drawn.
BASES: dict[str, tuple[Callable[[random.Random], Draft], float]] = {
    "rect": (rect_base, 3.0),
    "disc": (disc_base, 2.0),
    "polygon": (polygon_base, 0.8),
    "obround": (obround_base, 0.8),
    "profile": (profile_base, 2.0),
    "ring": (ring_base, 1.0),
    "turned": (turned_base, 2.0),
    "loft": (loft_base, 1.0),
    "shell": (shell_base, 2.0),
    "swept": (swept_base, 1.2),
    "leaning": (leaning_base, 1.2),
}
# Compositions only "ood" rows hold: both tokens in the signature.
HELD_OUT_PAIRS = (
    ("shell_cup", "holes_polar"),
    ("turned_flanged", "cross_hole"),
    ("gussets", "holes_legs"),
    ("handle", "shell_lid"),
    ("hole_cbore", "holes_polar"),
)
# Names (head nouns) only "ood" rows use.
HELD_OUT_NAMES = frozenset({"bushing", "puck", "cradle", "bin"})


def names_for(draft: Draft) -> list[str]:
    """Everyday names that fit the composition (a name may repeat to weigh it)."""
    f, base, p = set(draft.features), draft.base, draft.params
    if base.startswith("swept_") or base == "leaning":
        return names_for_bent(draft)
    if base == "rect":
        if p["thickness"] >= 15 or draft.z_word == "tall":
            names = ["block", "mounting block", "spacer block", "riser block"]
            if f & {"pocket_rect", "pocket_round", "pocket_slot"}:
                names += ["holder", "nest block", "fixture block"]
            return names
        names = ["plate", "mounting plate", "base plate", "cover plate", "panel"]
        if "ears" in f:
            names += ["bracket", "mounting bracket", "flat bracket"]
        if "ribs" in f:
            names = ["ribbed plate", "stiffened panel"]
            names += ["heat sink"] if p["rib_count"] >= 3 else []
        if {"boss", "boss_bore"} & f:
            names += ["mount", "base"]
        if not any(t.startswith(("holes_", "center_", "slot", "ears")) for t in f):
            names += ["shim", "tile"]
        if "handle" in f:
            names = ["cover with a handle", "hatch cover", "lid"]
        return names
    if base == "disc":
        names = ["disc", "round plate", "puck"]
        if "holes_polar" in f:
            names += ["flange", "flange", "bolt flange"]
        if {"center_hole", "center_cbore"} & f:
            names += ["washer", "spacer"] if p["thickness"] <= 6 else ["spacer", "hub"]
        if "flutes" in f:
            names = ["knob", "thumb wheel", "grip wheel"]
        elif {"boss", "boss_bore"} & f:
            names += ["knob", "base"]
        plain = not f - {"edge_fillet", "edge_chamfer", "pocket_round"}
        if p["thickness"] <= 10 and p["outer_d"] >= 50 and plain:
            names += ["coaster", "coaster", "coaster"]
        if "handle" in f:
            names = ["round lid", "lid", "round cover"]
        return names
    if base in ("hexagon", "octagon"):
        shape = "hex" if base == "hexagon" else "octagonal"
        names = [f"{shape} block", f"{shape} prism"]
        if {"center_hole", "center_cbore"} & f:
            names += [f"{shape} spacer", "standoff" if p["thickness"] > 15 else f"{shape} spacer"]
        if {"boss", "boss_bore"} & f:
            names += [f"{shape} knob", "knob"]
        return names
    if base == "obround":
        return ["link", "strap", "connecting link", "tab", "slotted bar", "lever arm"]
    if base == "profile_l":
        return ["L bracket", "angle bracket", "corner bracket", "shelf bracket", "bracket"]
    if base == "profile_t":
        return ["T bracket", "tee", "T-section", "stiffener", "T rail"]
    if base == "profile_u":
        names = ["U channel", "channel", "saddle", "U bracket", "cradle"]
        if "cross_hole" in f:
            names += ["clevis", "yoke"]
        return names
    if base == "profile_c":
        return ["C channel", "C-rail", "track", "rail"]
    if base == "split_ring":
        return ["clip", "C clip", "pipe clip", "split ring", "split collar"]
    if base == "arc":
        return ["arc segment", "curved bracket", "curved strap", "ring segment"]
    if base == "turned_tube":
        return ["sleeve", "spacer", "tube", "bushing", "collar"]
    if base == "turned_flanged":
        if "bore_d" in p:
            return ["flanged bushing", "flanged sleeve", "hub", "spigot", "flanged spacer"]
        return ["flanged peg", "stand", "spigot", "foot"]
    if base == "turned_headed":
        return ["peg", "knob", "plug", "stopper", "mushroom knob", "pin"]
    if base == "turned_stepped":
        return ["stepped shaft", "stepped spacer", "standoff", "spindle", "adapter"]
    if base.startswith("loft_"):
        names = ["foot", "pedestal", "riser", "stand", "plinth"]
        return names + (["cone", "tapered foot"] if base == "loft_round" else ["tapered block"])
    if base == "shell_box":
        if "divider" in f:
            return ["organizer", "compartment tray", "divided box"]
        if p["height"] < min(p["length"], p["width"]) / 2:
            return ["tray", "tray", "shallow box", "bin"]
        return ["box", "bin", "enclosure", "case", "container"]
    if base == "shell_cup":
        return ["cup", "pot", "container", "canister", "round box"]
    if base == "shell_lid":
        return ["lid", "cover", "cap", "hood"]
    raise ValueError(f"no names for base {base!r}")


def head(name: str) -> str:
    """The head noun of a name: 'bushing' of 'flanged bushing'."""
    return name.split()[-1].lower()


def split_rule(params: dict[str, Any]) -> str:
    """The split of a compositional row: "ood" for held-out compositions and names, else by hash."""
    tokens = set(str(params["composition"]).split("+"))
    if any(a in tokens and b in tokens for a, b in HELD_OUT_PAIRS):
        return "ood"
    if head(str(params["name"])) in HELD_OUT_NAMES:
        return "ood"
    unit = int(params_key(FAMILY, params)[:8], 16) / 0xFFFFFFFF
    cumulative = 0.0
    for split in SPLITS:
        cumulative += SPLIT_SHARES[split]
        if unit < cumulative:
            return split
    return SPLITS[-1]


def draw_draft(rng: random.Random) -> Draft:
    """One composition from the grammar."""
    names = list(BASES)
    weights = [BASES[name][1] for name in names]
    make = BASES[rng.choices(names, weights)[0]][0]
    return make(rng)


def program_of(draft: Draft) -> str:
    """The reference: imports, one named parameter per line, then the construction."""
    head_lines = ["import cadquery as cq"] + (["import math"] if draft.uses_math else [])
    params = [f"{name} = {value!r}" for name, value in draft.params.items()]
    return "\n".join([*head_lines, "", *params, "", *draft.lines]) + "\n"


@dataclass
class Compositional:
    """Programs composed from the grammar; opt-in, with its own split rule (see the module)."""

    name: str = FAMILY
    domain: str = "cad"
    held_out: bool = False
    opt_in: bool = True

    def sample(self, rng: random.Random, called: str | None = None) -> Sample:
        """Draw a composition, name it, and write its program, request and spec; the request
        calls it `called` when given (corpus build `--novel-names`)."""
        draft = draw_draft(rng)
        shape = {"composition": draft.signature, **draft.params}
        named = random.Random(params_key(FAMILY, shape))
        name = pick(named, names_for(draft))
        params = {**shape, "name": name}
        spec: dict[str, Any] = {"bbox_mm": [round(float(v), 3) for v in draft.bbox], "solids": 1}
        if draft.any_orientation:
            spec["any_orientation"] = True
        return Sample(prompt_of(rng, draft, called or name), program_of(draft), params, spec)

    def split_rule(self, params: dict[str, Any]) -> str:
        """The row's split (base.split_of asks a family that has one)."""
        return split_rule(params)


def _an(phrase: str) -> str:
    vowel = phrase[:1].lower() in "aeiou" or phrase.startswith(("8", "11", "18", "L ", "L-"))
    return f"{'an' if vowel and not phrase.startswith('U') else 'a'} {phrase}"


def size_words(rng: random.Random, box: list[float], draft: Draft) -> list[str]:
    """A size as axis-worded phrases: ['80 mm long', '40 wide', '12 thick'] or ['Ø60', ...]."""
    x, y, z = box
    tall = f"{length(rng, z)} {draft.z_word}"
    if draft.shape == "round":
        d = pick(
            rng,
            [
                f"{length(rng, x)} diameter",
                f"{length(rng, x)} OD",
                f"Ø{number(x)}",
                f"diameter {length(rng, x)}",
                f"{length(rng, x)} across",
            ],
        )
        return [d, tall]
    along, across = draft.words
    return [f"{length(rng, x)} {along}", f"{length(rng, y)} {across}", tall]


def triple(rng: random.Random, box: list[float]) -> str:
    """A size triple in axis order: '80 x 40 x 12 mm', '80×40×12'."""
    x, y, z = (number(v) for v in box)
    return pick(rng, [f"{x} x {y} x {z} mm", f"{x}x{y}x{z}", f"{x} × {y} × {z} mm"])


def base_words(rng: random.Random, draft: Draft, box: list[float]) -> list[str]:
    """The sizes of the base (the whole part when nothing sticks out) in words."""
    if draft.base in ("hexagon", "octagon", "arc"):
        return [f"{length(rng, box[2])} {draft.z_word}"]
    if draft.base.startswith("swept_"):  # said by its section and bend; sometimes overall too
        said = pick(rng, [f"overall {triple(rng, box)}", f"{triple(rng, box)} overall"])
        return [said] if rng.random() < 0.3 else []
    if draft.shape == "box" and rng.random() < 0.3:
        return [triple(rng, box)]
    return size_words(rng, box, draft)


def overall_words(rng: random.Random, draft: Draft) -> str:
    """The overall size along the axes that features made larger: '46 tall overall'."""
    box = draft.bbox
    if draft.grown == {"z"} or (draft.shape == "round" and "z" in draft.grown):
        return pick(
            rng, [f"{length(rng, box[2])} tall overall", f"overall height {length(rng, box[2])}"]
        )
    if draft.grown == {"x"}:
        return pick(
            rng,
            [f"{length(rng, box[0])} long overall", f"overall length {length(rng, box[0])}"],
        )
    return pick(rng, [f"overall {triple(rng, box)}", f"{triple(rng, box)} overall"])


def prompt_of(rng: random.Random, draft: Draft, name: str) -> str:
    """A request for the composition: its name, overall size, base and features, any order."""
    thing = _an(f"{draft.adjective} {name}".strip())
    if draft.sticks_out:
        sizes = base_words(rng, draft, draft.base_box)
        body = pick(rng, ["", "", "the body ", "the base "] if len(sizes) > 1 else [""])
        sizes = [f"{body}{sizes[0]}", *sizes[1:]]
        if rng.random() < 0.7:
            sizes.append(overall_words(rng, draft))
    else:
        sizes = base_words(rng, draft, draft.bbox)
    described = [phrase(rng) for phrase in draft.base_phrases]
    features = [phrase(rng) for phrase in draft.phrases]
    rng.shuffle(features)
    if rng.random() < 0.75:
        pieces = [*sizes, *described, *features]
    else:
        pieces = [*described, *sizes, *features]
        rng.shuffle(pieces)
    return request(rng, thing, joined(rng, pieces))


def joined(rng: random.Random, pieces: list[str]) -> str:
    """Phrases listed as people list them: commas or semicolons, 'and' or a comma last."""
    if len(pieces) == 1:
        return pieces[0]
    joiner = pick(rng, [", ", ", ", ", ", "; "])
    last = pick(rng, [" and ", ", ", ", and ", joiner])
    return joiner.join(pieces[:-1]) + last + pieces[-1]


FAMILIES: list[Family] = [Compositional()]
