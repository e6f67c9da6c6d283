#!/usr/bin/env bash
# The main job: set up what is missing, then start the service (`genservice run`).
# Arguments replace `run`: ./scripts/run.sh validate part.py
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/genservice "${@:-run}"
