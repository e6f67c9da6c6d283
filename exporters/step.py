"""STEP (AP242 by default, or AP214) from what a script built: exact B-rep, assembly and names.

This runs inside the sandbox, next to the program's shapes (the exact B-rep never leaves it as
anything but STEP text). An Assembly keeps its own tree, names, locations and colours; other
results become one assembly with a child per shown object. The header is filled from the export's
provenance with a fixed timestamp, so the same input gives the same bytes.
"""

from __future__ import annotations

import os
from typing import Any

import cadquery as cq
from cadquery.occ_impl.assembly import toCAF
from OCP.APIHeaderSection import APIHeaderSection_MakeHeader
from OCP.IFSelect import IFSelect_RetDone
from OCP.Interface import Interface_Static
from OCP.STEPCAFControl import STEPCAFControl_Writer
from OCP.STEPControl import STEPControl_Controller, STEPControl_StepModelType
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
    with open(path, "rb") as handle:
        data = handle.read()
    os.unlink(path)
    return data


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
