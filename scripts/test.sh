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
# Two workers by default (GENSERVICE_TEST_WORKERS=0 runs in one process): most tests wait on
# subprocesses (sandbox, service, browser), so two cores keep two of them busy. A file's tests
# stay on one worker, sharing its module fixtures.
workers=${GENSERVICE_TEST_WORKERS:-2}
echo "== pytest" && exec .venv/bin/pytest -q -n "$workers" --dist loadfile "$@"
