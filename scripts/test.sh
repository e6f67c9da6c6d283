#!/usr/bin/env bash
# Set up what is missing, then run lint, type checks and the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
echo "== ruff" && .venv/bin/ruff check .
echo "== mypy" && .venv/bin/mypy
if [ -f web/package.json ]; then
  echo "== web (vitest)" && (cd web && npm test --silent)
fi
echo "== pytest" && exec .venv/bin/pytest -q "$@"
