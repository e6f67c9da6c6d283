"""Forgery: a candidate that has read this repository tries to write its own Report.

Each attack is a real sandbox run of a script that builds a 10 mm cube and then rewrites, in its
own process, whatever it can reach of the code that used to measure it, or hands over something
other than what it shows. The spec asks for a 40 mm cube. Every attack must end with truthful
facts (the cube as it is, so the spec fails) or an invalid Report; never a forged pass. An honest
40 mm cube with the same spec stays valid.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from exporters.export import ExportError, ExportOptions, export_script
from validators.cad.validate import validate_cad
from validators.report import Report
from validators.sandbox import Limits, SandboxPool

SPEC = {"volume_mm3": 64000.0, "bbox_mm": [40.0, 40.0, 40.0]}
LIMITS = Limits(wall_s=10.0, memory_mb=768)
CUBE = "import cadquery as cq\nresult = cq.Workplane().box(10, 10, 10)\n"
BIG = "import cadquery as cq\nresult = cq.Workplane().box(40, 40, 40)\n"

# Forged measurements, written as a policy would: same function objects, new code.
FORGE_METHODS = """
import cadquery as cq

def _volume(self):
    return 64000.0

def _bbox(self, tolerance=None, optimal=True):
    return cq.occ_impl.geom.BoundBox._fromTopoDS(cq.Workplane().box(40, 40, 40).val().wrapped)

def _valid(self):
    return True

cq.Shape.Volume.__code__ = _volume.__code__
cq.Shape.BoundingBox.__code__ = _bbox.__code__
cq.Shape.isValid.__code__ = _valid.__code__
"""

FORGE_GUEST = """
import sys
import validators.cad.guest as guest
import validators.cad.measurer as measurer

def _describe(part, options):
    return {"name": part["name"], "color": None, "solids": 1, "faces": 6,
            "volume_mm3": 64000.0, "valid": True, "invalid_reason": None, "holes": 0,
            "bbox": [-20.0, -20.0, -20.0, 20.0, 20.0, 20.0], "mesh": None}

def _handover(handover, max_bytes):
    raise AssertionError("never read")

measurer.describe_part.__code__ = _describe.__code__
measurer.read_handover.__code__ = _handover.__code__
"""

FORGE_CLASS_ATTRIBUTES = """
import cadquery as cq
cq.Shape.Volume = lambda self: 64000.0
cq.Solid.Volume = lambda self: 64000.0
cq.Shape.isValid = lambda self: True
"""

FORGE_REFERRERS = """
import gc
import cadquery as cq
import validators.cad.measurer as measurer

def fake(part, options):
    return {"name": "part_0", "color": None, "solids": 1, "faces": 6, "volume_mm3": 64000.0,
            "valid": True, "invalid_reason": None, "holes": 0,
            "bbox": [-20.0, -20.0, -20.0, 20.0, 20.0, 20.0], "mesh": None}

original = measurer.describe_part
for referrer in gc.get_referrers(original):
    if isinstance(referrer, dict):
        for key, value in list(referrer.items()):
            if value is original:
                referrer[key] = fake
"""

# The function's code pointer rewritten in memory, beneath anything Python could guard.
FORGE_CTYPES = """
import ctypes
import sys
import cadquery as cq

def _volume(self):
    return 64000.0

target = cq.Shape.Volume
code = _volume.__code__
ctypes.pythonapi.Py_IncRef(ctypes.py_object(code))
# PyFunctionObject: refcount, type, globals, builtins, name, qualname, code (CPython 3.11+).
slot = ctypes.c_void_p.from_address(id(target) + 6 * ctypes.sizeof(ctypes.c_void_p))
slot.value = id(code)
assert cq.Workplane().box(10, 10, 10).val().Volume() == 64000.0
"""

# Shows the 10 mm cube but hands over a 40 mm one: judged and delivered as the 40 mm one.
SWAP_HANDOVER = """
import cadquery as cq
import validators.cad.guest as guest

def _collect(objects):
    big = cq.Workplane().box(40, 40, 40).val()
    return "part", [{"name": "part_0", "shapes": [big]}]

guest.collect_parts.__code__ = _collect.__code__
result = cq.Workplane().box(10, 10, 10)
"""


def _forged_handover(body: str) -> str:
    """A script whose hand-over is written by `body` (which defines `forge(objects)`)."""
    return (
        "import base64, hashlib, json\n"
        "import cadquery as cq\n"
        "import validators.cad.guest as guest\n"
        # `forge` runs with hand_over's globals once its code is swapped in: it imports its own.
        + body.replace(
            "def forge(objects):\n",
            "def forge(objects):\n"
            "    import base64, hashlib\n"
            "    import cadquery as cq\n"
            "    import validators.cad.measurer as measurer\n",
        )
        + "\n"
        "guest.hand_over.__code__ = forge.__code__\n"
        "result = cq.Workplane().box(10, 10, 10)\n"
    )


GARBAGE = _forged_handover(
    "def forge(objects):\n"
    "    data = b'\\x00garbage' * 100\n"
    "    return {'format': 'occt-bin-brep/1', 'kind': 'part', 'brep': base64.b64encode(data)"
    ".decode(),\n"
    "            'parts': [{'name': 'p', 'color': None, 'bytes': len(data),\n"
    "                       'sha256': hashlib.sha256(data).hexdigest()}]}\n"
)
TRUNCATED = _forged_handover(
    "def forge(objects):\n"
    "    data = measurer.encode_shape(cq.Workplane().box(40, 40, 40).val())\n"
    "    cut = data[: len(data) // 2]\n"
    "    return {'format': 'occt-bin-brep/1', 'kind': 'part', 'brep': base64.b64encode(cut)"
    ".decode(),\n"
    "            'parts': [{'name': 'p', 'color': None, 'bytes': len(cut),\n"
    "                       'sha256': hashlib.sha256(cut).hexdigest()}]}\n"
)
LYING_SIZES = _forged_handover(
    "def forge(objects):\n"
    "    data = measurer.encode_shape(cq.Compound.makeCompound([cq.Solid.makeBox(40, 40, 40)]))\n"
    "    return {'format': 'occt-bin-brep/1', 'kind': 'assembly', 'brep': base64.b64encode(data)"
    ".decode(),\n"
    "            'parts': [{'name': 'a', 'color': None, 'bytes': len(data) // 2,\n"
    "                       'sha256': hashlib.sha256(data[: len(data) // 2]).hexdigest()},\n"
    "                      {'name': 'b', 'color': None, 'bytes': len(data) - len(data) // 2,\n"
    "                       'sha256': hashlib.sha256(data[len(data) // 2 :]).hexdigest()}]}\n"
)
LYING_DIGEST = _forged_handover(
    "def forge(objects):\n"
    "    data = measurer.encode_shape(cq.Compound.makeCompound([cq.Solid.makeBox(40, 40, 40)]))\n"
    "    return {'format': 'occt-bin-brep/1', 'kind': 'part', 'brep': base64.b64encode(data)"
    ".decode(),\n"
    "            'parts': [{'name': 'p', 'color': None, 'bytes': len(data), 'sha256': '0' * 64}]}\n"
)
LYING_KIND = _forged_handover(
    "def forge(objects):\n"
    "    data = measurer.encode_shape(cq.Compound.makeCompound([cq.Solid.makeBox(40, 40, 40)]))\n"
    "    entry = {'name': 'p', 'color': None, 'bytes': len(data),\n"
    "             'sha256': hashlib.sha256(data).hexdigest()}\n"
    "    return {'format': 'occt-bin-brep/1', 'kind': 'part',\n"
    "            'brep': base64.b64encode(data + data).decode(), 'parts': [entry, entry]}\n"
)
NOT_A_COMPOUND = _forged_handover(
    "def forge(objects):\n"
    "    data = measurer.encode_shape(cq.Solid.makeBox(40, 40, 40))\n"
    "    return {'format': 'occt-bin-brep/1', 'kind': 'part', 'brep': base64.b64encode(data)"
    ".decode(),\n"
    "            'parts': [{'name': 'p', 'color': None, 'bytes': len(data),\n"
    "                       'sha256': hashlib.sha256(data).hexdigest()}]}\n"
)
FACTS_INSTEAD = _forged_handover(
    "def forge(objects):\n"
    "    return {'kind': 'part', 'result_type': 'Workplane', 'parts': [{'name': 'part_0',\n"
    "            'color': None, 'solids': 1, 'faces': 6, 'volume_mm3': 64000.0, 'valid': True,\n"
    "            'invalid_reason': None, 'holes': 0, 'bbox': [-20, -20, -20, 20, 20, 20],\n"
    "            'mesh': None}]}\n"
)
OVERSIZED = _forged_handover(
    "def forge(objects):\n"
    "    data = measurer.encode_shape(cq.Compound.makeCompound([cq.Solid.makeBox(40, 40, 40)]))\n"
    "    data = data * (3_000_000 // len(data) + 1)\n"
    "    return {'format': 'occt-bin-brep/1', 'kind': 'part', 'brep': base64.b64encode(data)"
    ".decode(),\n"
    "            'parts': [{'name': 'p', 'color': None, 'bytes': len(data),\n"
    "                       'sha256': hashlib.sha256(data).hexdigest()}]}\n"
)
# The whole result record written straight to the worker's pipe, as the harness would.
RAW_RECORD = """
import json, os, sys
import cadquery as cq
from validators.sandbox.protocol import encode
facts = {"kind": "part", "result_type": "Workplane", "parts": [{"name": "part_0", "color": None,
         "solids": 1, "faces": 6, "volume_mm3": 64000.0, "valid": True, "invalid_reason": None,
         "holes": 0, "bbox": [-20, -20, -20, 20, 20, 20], "mesh": None}]}
data = encode({"status": "ok", "payload": facts, "peak_memory_mb": 1.0})
for fd in range(3, 64):
    try:
        os.write(fd, data)
        os.close(fd)
    except OSError:
        pass
sys.stdout.flush()
os.close(1)
os.close(2)
os._exit(0)
"""


def _validate(pool: SandboxPool, source: str, limits: Limits = LIMITS) -> Report:
    return validate_cad(source, pool, spec=SPEC, limits=limits)


def test_an_honest_40_mm_cube_meets_the_spec(pool: SandboxPool) -> None:
    report = _validate(pool, BIG)
    assert report.valid, report.error
    assert report.metrics["volume_mm3"] == pytest.approx(64000.0)
    assert report.metrics["handover"]["bytes"] > 0


@pytest.mark.parametrize(
    "attack",
    [FORGE_METHODS, FORGE_GUEST, FORGE_CLASS_ATTRIBUTES, FORGE_REFERRERS, FORGE_CTYPES],
    ids=[
        "code-of-cadquery-methods",
        "code-of-measuring-functions",
        "class-attributes",
        "gc-referrers",
        "ctypes-write",
    ],
)
def test_rewriting_what_used_to_measure_changes_no_fact(pool: SandboxPool, attack: str) -> None:
    report = _validate(pool, attack + CUBE)
    # These attacks leave the hand-over alone, so the cube is measured as it is.
    assert not report.valid, f"forged pass: {report.metrics}"
    assert report.checks["executes"].passed, report.error
    assert report.metrics["volume_mm3"] == pytest.approx(1000.0)
    assert report.metrics["bbox_mm"] == pytest.approx([10.0, 10.0, 10.0])
    assert report.checks["brep_valid"].passed
    assert not report.checks["spec"].passed


def test_an_invalid_shape_stays_invalid_when_validity_is_forged(pool: SandboxPool) -> None:
    # Two overlapping boxes fused into one compound without a boolean: it intersects itself.
    source = FORGE_METHODS + (
        "a = cq.Solid.makeBox(10, 10, 10)\n"
        "b = cq.Solid.makeBox(10, 10, 10, pnt=cq.Vector(5, 5, 5))\n"
        "result = cq.Workplane().add(cq.Solid.makeSolid(cq.Shell.makeShell("
        "a.Faces() + b.Faces())))\n"
    )
    report = validate_cad(source, pool, limits=LIMITS)
    assert not report.valid


def test_the_shape_handed_over_is_the_one_judged_and_delivered(
    pool: SandboxPool, tmp_path: Path
) -> None:
    report = _validate(pool, SWAP_HANDOVER)
    # Judged as what was handed over: the 40 mm cube, which meets the spec as that cube.
    assert report.metrics["volume_mm3"] == pytest.approx(64000.0)
    assert report.metrics["bbox_mm"] == pytest.approx([40.0, 40.0, 40.0])
    result = export_script(
        SWAP_HANDOVER, tmp_path, pool, options=ExportOptions(formats=("stl", "step")), limits=LIMITS
    )
    import trimesh

    mesh = trimesh.load_mesh(result.files["stl"])
    assert mesh.extents == pytest.approx([40.0, 40.0, 40.0], abs=1e-3)
    manifest = json.loads(result.manifest.read_text())
    assert manifest["brep"]["sha256"] == report.metrics["handover"]["sha256"]
    assert manifest["report"]["metrics"]["volume_mm3"] == pytest.approx(64000.0)


@pytest.mark.parametrize(
    "attack",
    [GARBAGE, TRUNCATED, LYING_SIZES, LYING_DIGEST, LYING_KIND, NOT_A_COMPOUND, FACTS_INSTEAD],
    ids=[
        "garbage",
        "truncated",
        "lying-sizes",
        "lying-digest",
        "lying-kind",
        "not-a-compound",
        "facts-instead-of-bytes",
    ],
)
def test_a_forged_handover_is_an_invalid_report(pool: SandboxPool, attack: str) -> None:
    report = _validate(pool, attack)
    assert not report.valid
    assert report.error is not None and report.error.kind == "handover", report.error
    assert "hand-over" in report.error.message
    assert report.reward == 0.0


def test_an_oversized_handover_is_refused(pool: SandboxPool) -> None:
    report = _validate(pool, OVERSIZED, limits=LIMITS.with_(handover_mb=2))
    assert not report.valid
    assert report.error is not None and report.error.kind == "handover"
    assert "larger than 2 MB" in report.error.message


def test_a_record_written_straight_to_the_pipe_is_only_a_handover(pool: SandboxPool) -> None:
    report = _validate(pool, RAW_RECORD)
    assert not report.valid
    assert report.error is not None and report.error.kind == "handover", report.error


def test_a_forged_export_is_not_exported(pool: SandboxPool, tmp_path: Path) -> None:
    with pytest.raises(ExportError):
        export_script(GARBAGE, tmp_path, pool, limits=LIMITS)
    assert not list(tmp_path.iterdir())


REACH_THE_MEASURER = """
import ctypes, os
me = os.getpid()
others = [int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) != me]
reached = []
for pid in others:
    for path in (f"/proc/{pid}/mem", f"/proc/{pid}/fd/0"):
        try:
            open(path, "rb").close()
            reached.append(path)
        except OSError:
            pass
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.ptrace(16, pid, 0, 0) == 0:  # PTRACE_ATTACH
        reached.append(f"ptrace {pid}")
shared = [line for line in open("/proc/self/maps") if line.split()[1][1] == "w"
          and line.split()[1][3] == "s"]
print(len(others), reached, shared)
"""


def test_the_program_cannot_reach_the_measurer(pool: SandboxPool) -> None:
    result = pool.run("python", REACH_THE_MEASURER, limits=LIMITS)
    assert result.ok, result.error
    count, reached, shared = result.stdout.strip().split(" ", 2)
    assert int(count) >= 2  # the worker and the measurer waiting for the hand-over
    assert reached == "[]" and shared == "[]", result.stdout
