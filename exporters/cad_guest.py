"""Measurer "cad_export": measure a hand-over as validation does, and write what exporting needs.

Runs in the sandbox's measurer (see validators/cad/measurer.py), never next to the candidate:
the payload is the validation payload (so the Report is the same as for `validate`) with
per-vertex normals in every part's mesh, plus the STEP file when asked for, written from the same
handed-over B-rep that was measured (the exact B-rep only exists inside the sandbox).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import cadquery as cq

from exporters.step import check_round_trip, step_bytes
from validators.cad.measurer import HandoverError, measure
from validators.sandbox.protocol import pack_bytes


@dataclass
class _Node:
    """One assembly of the tree being rebuilt: its own shape (if any) and its children."""

    name: str
    shape: cq.Shape | None = None
    color: list[float] | None = None
    children: list[_Node] = field(default_factory=list)


def _assembly(parts: list[dict[str, Any]], root: str | None, name: str) -> cq.Assembly:
    """The hand-over's parts as the assembly tree the script built (names, colours, nesting),
    every shape placed as it was measured; parts shown side by side hang under one root."""
    top = _Node(root or name)
    nodes: dict[tuple[str, ...], _Node] = {(): top}

    def node(path: tuple[str, ...]) -> _Node:
        if path not in nodes:
            nodes[path] = _Node(path[-1])
            node(path[:-1]).children.append(nodes[path])
        return nodes[path]

    for part in parts:
        path = tuple(part["path"])
        if root is not None and path[:1] == (root,):
            path = path[1:]  # the shown assembly is the root itself
        elif root is not None and not path and part["name"] == root and top.shape is None:
            top.shape, top.color = part["shapes"][0], part.get("color")
            continue
        here = (*path, part["name"])
        if here in nodes and nodes[here].shape is None:  # an assembly that also has a shape
            nodes[here].shape, nodes[here].color = part["shapes"][0], part.get("color")
            continue
        child = _Node(part["name"], part["shapes"][0], part.get("color"))
        node(path).children.append(child)
        nodes.setdefault(here, child)
    taken: set[str] = set()

    def build(item: _Node) -> cq.Assembly:
        unique = item.name
        while unique in taken:
            unique += "_"
        taken.add(unique)
        color = cq.Color(*item.color) if item.color else None
        assembly = cq.Assembly(item.shape, name=unique, color=color)
        for child in item.children:
            assembly.add(build(child))
        return assembly

    return build(top)


def measure_cad_export(handover: Any, options: dict[str, Any]) -> dict[str, Any]:
    """Measurer "cad_export": measure with normals, and write STEP if options["step"]."""
    try:
        payload, parts = measure(handover, {**options, "normals": True})
    except HandoverError as exc:
        return {"problem": {"kind": "handover", "message": f"bad hand-over: {exc}"}}
    except Exception as exc:  # OCCT refused a shape that parsed: it cannot be judged sound
        message = f"the shape could not be measured: {type(exc).__name__}: {exc}"[:2000]
        return {"problem": {"kind": "measure", "message": message}}
    header = options.get("step")
    sound = payload["parts"] and all(p["valid"] and p["solids"] for p in payload["parts"])
    if header is not None and sound:
        try:
            assembly = _assembly(parts, payload.get("root"), header.get("name") or "model")
            data = step_bytes([(assembly, None)], header)
            solids = [s for part in parts for s in part["shapes"][0].Solids()]
            payload["step_check"] = check_round_trip(data, solids)
            payload["step"] = pack_bytes(data)
        except Exception as exc:  # OCCT refused: the other formats can still be written
            payload["step_error"] = f"{type(exc).__name__}: {exc}"[:500]
    return payload
