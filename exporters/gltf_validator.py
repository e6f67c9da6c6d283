"""Run the Khronos glTF validator (npm `gltf-validator`, installed by scripts/setup.sh) on GLBs.

The validator is JavaScript; `tools/gltf-validator/validate.mjs` runs it under Node and prints
one JSON report per file. Our code never judges its own GLBs with its own reader alone.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_TOOL_DIR = Path(__file__).resolve().parents[1] / "tools" / "gltf-validator"
TOOL_DIR = Path(os.environ.get("GENSERVICE_GLTF_VALIDATOR_DIR") or DEFAULT_TOOL_DIR)
SEVERITIES = {"error": 0, "warning": 1, "info": 2, "hint": 3}
# The ratified KHR_gaussian_splatting attribute names are unknown to the validator of late 2025,
# which reports them as invalid attribute names; only this code is relaxed for splat files.
SPLAT_OVERRIDES = {"MESH_PRIMITIVE_INVALID_ATTRIBUTE": "info"}


class ValidatorUnavailable(RuntimeError):
    """Node or the validator package is missing (run scripts/setup.sh)."""


@dataclass(frozen=True)
class GltfReport:
    """The validator's verdict on one file."""

    file: str
    errors: int
    warnings: int
    messages: list[dict[str, Any]]
    info: dict[str, Any]

    @property
    def clean(self) -> bool:
        """No errors and no warnings."""
        return self.errors == 0 and self.warnings == 0


def available() -> bool:
    """Whether Node and the installed validator package are present."""
    installed = (TOOL_DIR / "node_modules" / "gltf-validator").is_dir()
    return shutil.which("node") is not None and installed


def validate_files(
    paths: list[Path], overrides: dict[str, str] | None = None, timeout_s: float = 120
) -> list[GltfReport]:
    """Validate GLB/glTF files; `overrides` maps issue codes to a severity name."""
    if not available():
        raise ValidatorUnavailable(
            f"the Khronos glTF validator is not installed in {TOOL_DIR} (run scripts/setup.sh)"
        )
    command = ["node", str(TOOL_DIR / "validate.mjs")]
    for code, severity in (overrides or {}).items():
        command += ["--override", f"{code}={SEVERITIES[severity]}"]
    command += [str(p) for p in paths]
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, check=False)
    if done.returncode != 0:
        raise ValidatorUnavailable(f"the glTF validator failed: {done.stderr.strip()[-500:]}")
    reports = []
    for item in json.loads(done.stdout):
        if "failure" in item:
            reports.append(GltfReport(item["file"], 1, 0, [{"message": item["failure"]}], {}))
            continue
        issues = item["report"]["issues"]
        reports.append(
            GltfReport(
                file=item["file"],
                errors=issues["numErrors"],
                warnings=issues["numWarnings"],
                messages=issues["messages"],
                info=item["report"].get("info", {}),
            )
        )
    return reports
