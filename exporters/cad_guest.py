"""Sandbox runner "cad_export": run a script once and return both what validation needs and
what exporting needs.

The payload is the validation payload (validators/cad/guest.py, so the Report is the same as
for `validate`) with per-vertex normals in every part's mesh, plus the STEP file when asked for:
the exact B-rep only exists inside the sandbox, so STEP is written (and read back to check it)
there.
"""

from __future__ import annotations

from typing import Any

from exporters.step import check_round_trip, step_bytes
from validators.cad.guest import ResultProblem, collect_parts, describe, execute_script
from validators.sandbox.protocol import pack_bytes


def run_cad_export(source: str, options: dict[str, Any]) -> dict[str, Any]:
    """Runner "cad_export": execute, describe with normals, and write STEP if options["step"]."""
    try:
        shown = execute_script(source, options)
        payload = describe(shown, {**options, "normals": True})
    except ResultProblem as problem:
        return {"problem": {"kind": problem.kind, "message": str(problem)}}
    header = options.get("step")
    sound = payload["parts"] and all(p["valid"] and p["solids"] for p in payload["parts"])
    if header is not None and sound:
        try:
            data = step_bytes(shown, header)
            solids = [
                s for part in collect_parts(shown)[1] for sh in part["shapes"] for s in sh.Solids()
            ]
            payload["step_check"] = check_round_trip(data, solids)
            payload["step"] = pack_bytes(data)
        except Exception as exc:  # OCCT refused: the other formats can still be written
            payload["step_error"] = f"{type(exc).__name__}: {exc}"[:500]
    return payload
