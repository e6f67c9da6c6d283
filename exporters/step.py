"""STEP (AP242 by default, or AP214) from what a script built: exact B-rep, assembly and names.

This runs inside the sandbox, next to the program's shapes (the exact B-rep never leaves it as
anything but STEP text). An Assembly keeps its own tree, names, locations and colours; other
results become one assembly with a child per shown object. The header is filled from the export's
provenance with a fixed timestamp, so the same input gives the same bytes.
"""

from __future__ import annotations

import hashlib
import os
import re
from typing import Any

import cadquery as cq
from cadquery.occ_impl.assembly import toCAF
from OCP.APIHeaderSection import APIHeaderSection_MakeHeader
from OCP.BRepGProp import BRepGProp
from OCP.GProp import GProp_GProps
from OCP.IFSelect import IFSelect_RetDone
from OCP.Interface import Interface_Static
from OCP.STEPCAFControl import STEPCAFControl_Writer
from OCP.STEPControl import (
    STEPControl_Controller,
    STEPControl_Reader,
    STEPControl_StepModelType,
)
from OCP.TCollection import TCollection_HAsciiString
from OCP.XSControl import XSControl_WorkSession

SCHEMAS = {"AP214": "AP214IS", "AP242": "AP242DIS"}


def assembly_of(shown: list[tuple[Any, str | None]], name: str) -> cq.Assembly:
    """One assembly for what a script showed (an Assembly shown alone is kept as it is)."""
    if len(shown) == 1 and isinstance(shown[0][0], cq.Assembly):
        return shown[0][0]
    root = cq.Assembly(name=name)
    taken: set[str] = set()
    for index, (obj, label) in enumerate(shown):
        items = list(obj) if isinstance(obj, list | tuple) else [obj]
        for j, item in enumerate(items):
            base = label or (item.name if isinstance(item, cq.Assembly) else f"part_{index}")
            child = base if len(items) == 1 else f"{base}_{j}"
            while child in taken:
                child += "_"
            taken.add(child)
            if isinstance(item, cq.Assembly):
                item.name = child
                root.add(item)
            else:
                root.add(_as_shape(item), name=child)
    return root


def _as_shape(obj: Any) -> cq.Shape | cq.Workplane:
    if isinstance(obj, cq.Workplane | cq.Shape):
        return obj
    wrapped = getattr(obj, "wrapped", obj)
    return cq.Shape.cast(wrapped)


def step_bytes(shown: list[tuple[Any, str | None]], header: dict[str, Any]) -> bytes:
    """STEP file bytes for what a script showed, with the header fields given.

    header: name, description, author, organization, originating_system, timestamp
    (ISO 8601), schema ("AP242" or "AP214").
    """
    schema = SCHEMAS[header.get("schema", "AP242")]
    assembly = assembly_of(shown, header.get("name") or "model")
    _, document = toCAF(assembly, True)
    # The write.* settings exist only once the STEP controller is initialised.
    STEPControl_Controller.Init_s()
    if not Interface_Static.SetCVal_s("write.step.schema", schema):
        raise RuntimeError(f"OCCT does not know the STEP schema {schema}")
    Interface_Static.SetIVal_s("write.surfacecurve.mode", 1)
    Interface_Static.SetIVal_s("write.precision.mode", 0)
    Interface_Static.SetCVal_s("xstep.cascade.unit", "MM")
    Interface_Static.SetCVal_s("write.step.unit", "MM")
    Interface_Static.SetCVal_s("write.step.product.name", header.get("name") or "model")
    writer = STEPCAFControl_Writer(XSControl_WorkSession(), False)
    writer.SetColorMode(True)
    writer.SetNameMode(True)
    writer.SetLayerMode(True)
    if not writer.Transfer(document, STEPControl_StepModelType.STEPControl_AsIs):
        raise RuntimeError("OCCT could not transfer the shapes to STEP")
    _fill_header(writer.ChangeWriter().Model(), header)
    path = os.path.join(os.getcwd(), "export.step")
    if writer.Write(path) != IFSelect_RetDone:
        raise RuntimeError("OCCT could not write the STEP file")
    with open(path, encoding="latin-1") as handle:
        text = handle.read()
    os.unlink(path)
    return canonical_step(text).encode("latin-1")


VOLUME_EPS = 1e-6


def precise_volume(solids: list[cq.Solid]) -> float:
    """Volume by OCCT's adaptive integration (relative error target VOLUME_EPS).

    The default fixed Gauss rule depends on how surfaces are parametrised: the same offset
    surface gives volumes 2e-5 apart before and after a STEP round trip, too coarse to tell a
    faithful file from a distorted one. The adaptive rule agrees to ~1e-10 on both sides.
    """
    total = 0.0
    for solid in solids:
        props = GProp_GProps()
        BRepGProp.VolumeProperties_s(solid.wrapped, props, VOLUME_EPS, False)
        total += props.Mass()
    return total


def check_round_trip(data: bytes, solids: list[cq.Solid], rel: float = 1e-6) -> dict[str, Any]:
    """Read the STEP back; raise RuntimeError unless it has the same solids and volume.

    OCCT writes a few surfaces wrongly (e.g. some surfaces of revolution from round sweep
    transitions come back three times larger); a file that does not reproduce the model must
    not pass for one that does. Returns what was compared.
    """
    volume_mm3 = precise_volume(solids)
    path = os.path.join(os.getcwd(), "check.step")
    with open(path, "wb") as handle:
        handle.write(data)
    try:
        reader = STEPControl_Reader()  # geometry only: names and colours were written by XCAF
        if reader.ReadFile(path) != IFSelect_RetDone:
            raise RuntimeError("the STEP file just written cannot be read back")
        reader.TransferRoots()
        read = cq.Shape.cast(reader.OneShape()).Solids()
    finally:
        os.unlink(path)
    read_volume = precise_volume(read)
    if len(read) != len(solids):
        raise RuntimeError(f"the STEP file reads back with {len(read)} solids, not {len(solids)}")
    if abs(read_volume - volume_mm3) > rel * max(abs(volume_mm3), 1e-9):
        raise RuntimeError(
            f"the STEP file reads back with volume {read_volume:.6g} mm³, not {volume_mm3:.6g}: "
            "OCCT cannot write this shape faithfully (try another construction, e.g. a sweep "
            "without round transitions)"
        )
    return {"solids": len(solids), "volume_mm3": volume_mm3, "read_volume_mm3": read_volume}


def _text(value: Any) -> TCollection_HAsciiString:
    # STEP header strings are ISO 10303-21 literals: keep them ASCII and free of quotes.
    clean = str(value).encode("ascii", "replace").decode().replace("'", "")
    return TCollection_HAsciiString(clean)


def _fill_header(model: Any, header: dict[str, Any]) -> None:
    make = APIHeaderSection_MakeHeader(model)
    make.SetName(_text(header.get("name") or "model"))
    make.SetTimeStamp(_text(header["timestamp"]))
    make.SetAuthorValue(1, _text(header.get("author") or ""))
    make.SetOrganizationValue(1, _text(header.get("organization") or ""))
    make.SetOriginatingSystem(_text(header.get("originating_system") or "genservice"))
    make.SetPreprocessorVersion(_text(header.get("preprocessor") or "OCCT via cadquery"))
    make.SetAuthorisation(_text(header.get("authorisation") or ""))
    make.SetDescriptionValue(1, _text(header.get("description") or ""))


# --- Canonical entity order ---------------------------------------------------------------
# OCCT writes some entities (the colour styles of assemblies) in the order of a hash map keyed
# by memory addresses, so the same shapes can come out numbered differently from run to run.
# Renumbering the DATA section by content makes the bytes a function of the model alone.

TOKEN = re.compile(r"'(?:[^']|'')*'|#\d+|;|[^'#;]+", re.DOTALL)


def _statements(data: str) -> list[tuple[int, list[str]]]:
    """The DATA section's entities as (id, tokens after '#id')."""
    entities: list[tuple[int, list[str]]] = []
    current: list[str] = []
    for token in TOKEN.findall(data):
        if token == ";":
            if current:
                head = current[0].strip() if current[0].strip() else ""
                identifier = int(head[1:]) if head.startswith("#") else None
                if identifier is None:
                    raise ValueError("a STEP entity without an id")
                entities.append((identifier, current[1:]))
            current = []
        elif current or token.strip():
            current.append(token)
    if any(t.strip() for t in current):
        raise ValueError("the STEP DATA section ends inside an entity")
    return entities


def canonical_step(text: str) -> str:
    """The same STEP file with its entities numbered and ordered by content."""
    start = text.index("DATA;") + len("DATA;")
    end = text.rindex("ENDSEC;")
    entities = dict(_statements(text[start:end]))
    digests: dict[int, str] = {}

    def digest(identifier: int, path: set[int]) -> str:
        if identifier in digests:
            return digests[identifier]
        if identifier in path or identifier not in entities:
            return "cycle"  # a back reference: its content is hashed where it was entered
        path.add(identifier)
        parts = [digest(int(t[1:]), path) if t.startswith("#") else t for t in entities[identifier]]
        path.discard(identifier)
        digests[identifier] = hashlib.sha1("\x00".join(parts).encode()).hexdigest()
        return digests[identifier]

    for identifier in entities:
        digest(identifier, set())
    referenced = {int(t[1:]) for body in entities.values() for t in body if t.startswith("#")}
    roots = sorted((i for i in entities if i not in referenced), key=lambda i: digests[i])
    order: list[int] = []
    seen: set[int] = set()
    for root in roots:
        stack = [root]
        while stack:
            identifier = stack.pop()
            if identifier in seen or identifier not in entities:
                continue
            seen.add(identifier)
            order.append(identifier)
            children = [int(t[1:]) for t in entities[identifier] if t.startswith("#")]
            stack.extend(reversed(children))
    order += sorted((i for i in entities if i not in seen), key=lambda i: digests[i])
    number = {old: new for new, old in enumerate(order, start=1)}
    lines = []
    for old in order:
        body = "".join(
            f"#{number.get(int(t[1:]), int(t[1:]))}" if t.startswith("#") else t
            for t in entities[old]
        )
        lines.append(f"#{number[old]}{body};")
    return text[:start] + "\n" + "\n".join(lines) + "\n" + text[end:]
