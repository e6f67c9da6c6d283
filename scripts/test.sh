#!/usr/bin/env bash
# Set up what is missing, then run lint, type checks, the docs build and the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
echo "== ruff" && .venv/bin/ruff check .
echo "== mypy" && .venv/bin/mypy
if [ -f web/package.json ]; then
  echo "== web (vitest)" && (cd web && npm test --silent)
fi
# The documentation site, strictly: a broken link, anchor or API reference fails the run.
echo "== docs (mkdocs build --strict)" && .venv/bin/genservice docs --output "${TMPDIR:-/tmp}/genservice-site"
# Two workers by default (GENSERVICE_TEST_WORKERS=0 runs in one process): most tests wait on
# subprocesses (sandbox, service, browser), so two cores keep two of them busy. A file's tests
# stay on one worker, sharing its module fixtures. Tests marked `serial` (they kill workers and
# wait out leases, so their timing must not depend on a neighbour) run afterwards, alone.
workers=${GENSERVICE_TEST_WORKERS:-2}
status=0
echo "== pytest"
.venv/bin/pytest -q -n "$workers" --dist loadfile -m "not serial" "$@" || status=$?
echo "== pytest (serial)"
.venv/bin/pytest -q -m serial "$@" || { rc=$?; [ "$rc" -eq 5 ] || status=$rc; }  # 5: none chosen
exit "$status"
