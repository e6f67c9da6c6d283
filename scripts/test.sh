#!/usr/bin/env bash
# Set up what is missing, then run lint, type checks and the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
echo "== ruff" && .venv/bin/ruff check .
echo "== mypy" && .venv/bin/mypy
echo "== pytest" && exec .venv/bin/pytest -q "$@"
