#!/usr/bin/env bash
# Prepare the accelerator run on a machine with network access and this project's venv:
#   1. .whl/: wheels (Python 3.12, x86-64) of the packages the GPU machine lacks, at the
#      versions requirements.lock pins, plus the bubblewrap .deb the RL section's sandbox needs;
#   2. bench/gpu/data/part.npz: the flange sample, run in the sandbox and tessellated.
# Then carry both folders to the GPU machine and run: bash bench/gpu/run.sh --device cuda
set -euo pipefail
cd "$(dirname "$0")/../.."

# What the GPU image lacks (it has torch, transformers, numpy, scipy, pillow, pyyaml, rich, ...).
NEEDED="deepspeed hjson pydantic pydantic_core annotated-types typing-inspection plyfile \
pydantic-settings python-dotenv trimesh gsplat jaxtyping wadler_lindig"

pin() {  # the version requirements.lock pins for a distribution (names compared normalised)
  local want
  want=$(echo "$1" | tr '_.' '--' | tr '[:upper:]' '[:lower:]')
  while IFS='=' read -r name _ version; do
    if [ "$(echo "$name" | tr '_.' '--' | tr '[:upper:]' '[:lower:]')" = "$want" ]; then
      echo "$version"
      return
    fi
  done < requirements.lock
  echo "prepare.sh: $1 is not pinned in requirements.lock" >&2
  exit 1
}

mkdir -p .whl
for package in $NEEDED; do
  version=$(pin "$package")
  echo "[prepare] $package==$version" >&2
  # A published wheel for Python 3.12 on x86-64; else (DeepSpeed ships source only) a pure
  # Python wheel built here, its CUDA ops left to build at run time (none are used).
  .venv/bin/pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
    --python-version 3.12 --implementation cp --platform manylinux_2_28_x86_64 \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform any \
    -d .whl "$package==$version" 2>/dev/null \
  || DS_BUILD_OPS=0 .venv/bin/pip wheel -q --disable-pip-version-check --no-deps -w .whl \
    "$package==$version" 2> >(grep -v "is ignored" >&2)
done
(cd .whl && apt-get download -q bubblewrap >/dev/null 2>&1)
du -sh .whl >&2

mkdir -p bench/gpu/data
.venv/bin/python - <<'PY'
import numpy as np

from exporters.export import script_parts
from exporters.samples import FOLDER
from validators.sandbox import SandboxPool

with SandboxPool(size=1) as pool:
    parts, report = script_parts((FOLDER / "flange.py").read_text(), pool)
vertices, triangles, offset = [], [], 0
for part in parts:
    vertices.append(np.asarray(part.vertices, dtype=np.float32))
    triangles.append(np.asarray(part.triangles, dtype=np.int32) + offset)
    offset += len(part.vertices)
np.savez_compressed(
    "bench/gpu/data/part.npz", vertices=np.concatenate(vertices), triangles=np.concatenate(triangles)
)
print(f"[prepare] bench/gpu/data/part.npz: flange, {offset} vertices, valid={report.valid}")
PY
