#!/usr/bin/env bash
# The main job: set up what is missing, then start genservice.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/genservice "${@:---help}"
