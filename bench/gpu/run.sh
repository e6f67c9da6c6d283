#!/usr/bin/env bash
# Accelerator proof run (bench/gpu/bench.py): sampler parity, generation throughput, DeepSpeed
# training steps and splat refinement on one device; writes gpu.json and gpu.md.
#
#   bench/gpu/run.sh [--device auto|cpu|cuda|cuda:N] [--tiny] [--out DIR]
#                    [--sections sampler,throughput,train,splat] [--budget SECONDS]
#
# Runs from the repository root whatever the working directory. The default output folder is
# $OUT when set, else bench/results/gpu. Python: $PYTHON, else .venv/bin/python, else python3.
# Packages this machine lacks may come as wheels in .whl/ at the repository root (made by
# bench/gpu/prepare.sh): each wheel whose distribution is not installed goes into /tmp/site
# (no index, no dependencies), which is put on PYTHONPATH; a bubblewrap .deb there is unpacked
# when bwrap is missing.
set -euo pipefail

usage() { sed -n '2,14s/^# \{0,1\}//p' "$0"; }

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"

device=auto
tiny=()
out="${OUT:-bench/results/gpu}"
sections=()
budget=()
while [ $# -gt 0 ]; do
  case "$1" in
    --device) device="${2:?--device needs a value}"; shift 2 ;;
    --device=*) device="${1#*=}"; shift ;;
    --tiny) tiny=(--tiny); shift ;;
    --out) out="${2:?--out needs a folder}"; shift 2 ;;
    --out=*) out="${1#*=}"; shift ;;
    --sections) sections=(--sections "${2:?--sections needs a list}"); shift 2 ;;
    --sections=*) sections=(--sections "${1#*=}"); shift ;;
    --budget) budget=(--budget "${2:?--budget needs seconds}"); shift 2 ;;
    --budget=*) budget=(--budget "${1#*=}"); shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "run.sh: unknown argument $1" >&2; usage >&2; exit 2 ;;
  esac
done

if [ -n "${PYTHON:-}" ]; then
  python="$PYTHON"
elif [ -x .venv/bin/python ]; then
  python=.venv/bin/python
else
  python=python3
fi

shopt -s nullglob
wheels=(.whl/*.whl)
shopt -u nullglob
if [ ${#wheels[@]} -gt 0 ]; then
  site=/tmp/site
  export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
  # The wheels whose distribution is missing (a wheel's name starts with its distribution's).
  missing=$("$python" - "${wheels[@]}" <<'EOF'
import sys
from importlib import metadata
from pathlib import Path

for wheel in sys.argv[1:]:
    try:
        metadata.version(Path(wheel).name.split("-")[0])
    except metadata.PackageNotFoundError:
        print(wheel)
EOF
)
  if [ -n "$missing" ]; then
    mkdir -p "$site"
    while IFS= read -r wheel; do
      echo "run.sh: installing $wheel into $site" >&2
      "$python" -m pip install -q --no-index --no-deps --target "$site" "$wheel" \
        || echo "run.sh: could not install $wheel; going on without it" >&2
    done <<< "$missing"
  fi
fi
export PYTHONPATH="$repo${PYTHONPATH:+:$PYTHONPATH}"
# The RL section's sandbox needs bubblewrap: unpack a carried .deb outside / when it is missing.
shopt -s nullglob
debs=(.whl/bubblewrap_*.deb)
shopt -u nullglob
if ! command -v bwrap >/dev/null && [ ${#debs[@]} -gt 0 ]; then
  dpkg -x "${debs[0]}" /tmp/bwrap-root && export PATH="/tmp/bwrap-root/usr/bin:$PATH"
fi

exec "$python" -m bench.gpu.bench --device "$device" --out "$out" \
  ${tiny[@]+"${tiny[@]}"} ${sections[@]+"${sections[@]}"} ${budget[@]+"${budget[@]}"}
