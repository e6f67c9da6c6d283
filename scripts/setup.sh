#!/usr/bin/env bash
# Idempotent set-up: Debian packages, the virtual environment and the pinned Python packages.
# Fast when nothing changed (a stamp of the dependency files skips pip).
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=${GENSERVICE_VENV:-.venv}
PYTHON=${PYTHON:-python3}
# chromium: the browser the editor's tests drive (never a browser download); wrk: bench/api.py
DEBIAN_PACKAGES=(bubblewrap libusb-1.0-0 chromium wrk)

say() { printf '\033[1m[setup]\033[0m %s\n' "$*" >&2; }

missing_debian_packages() {
  local pkg
  for pkg in "${DEBIAN_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || echo "$pkg"
  done
}

install_debian_packages() {
  local missing
  missing=$(missing_debian_packages)
  [ -z "$missing" ] && return 0
  command -v apt-get >/dev/null || { say "please install: $missing (no apt-get here)"; exit 1; }
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  say "installing Debian packages: $missing"
  $sudo apt-get update -qq
  # shellcheck disable=SC2086
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq $missing >/dev/null
}

pip_install() {
  # Local package mirrors make pip warn about every missing folder; keep the real messages.
  "$VENV/bin/pip" install -q --disable-pip-version-check "$@" 2> >(grep -v "is ignored" >&2)
}

install_python_packages() {
  local stamp="$VENV/.genservice-stamp"
  local want
  want=$(cat pyproject.toml requirements.lock scripts/setup.sh | sha256sum | cut -d' ' -f1)
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    return 0
  fi
  if [ ! -x "$VENV/bin/python" ]; then
    say "creating virtual environment in $VENV"
    "$PYTHON" -m venv "$VENV"
  fi
  say "installing Python packages (torch first, then the pinned lock)"
  # torch first and pinned: a looser requirement would pull a multi-GB CUDA build.
  pip_install torch==2.13.0
  pip_install -c requirements.lock -e '.[dev]'
  echo "$want" > "$stamp"
}

install_node_tools() {
  # The Khronos glTF validator checks every GLB the exporters write (tests, `genservice export`).
  local dir=tools/gltf-validator
  command -v npm >/dev/null || { say "please install Node.js 20 and npm"; exit 1; }
  local want
  want=$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1)
  if [ -f "$dir/node_modules/.genservice-stamp" ] && \
     [ "$(cat "$dir/node_modules/.genservice-stamp")" = "$want" ]; then
    return 0
  fi
  say "installing the glTF validator (npm ci in $dir)"
  (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
  echo "$want" > "$dir/node_modules/.genservice-stamp"
}

build_editor() {
  # The web editor: npm ci, its API client generated from the service's OpenAPI schema, a Vite
  # build into web/dist (served by the API at /). Skipped when sources and schema are unchanged.
  local dir=web
  [ -f "$dir/package.json" ] || return 0
  local lock_want
  lock_want=$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1)
  if [ ! -f "$dir/node_modules/.genservice-stamp" ] || \
     [ "$(cat "$dir/node_modules/.genservice-stamp")" != "$lock_want" ]; then
    say "installing the editor's packages (npm ci in $dir)"
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
    echo "$lock_want" > "$dir/node_modules/.genservice-stamp"
  fi
  "$VENV/bin/python" -m genservice.api.openapi "$dir/openapi.json"
  local want
  want=$( (cd "$dir" && find src index.html package-lock.json openapi.json vite.config.ts \
    tsconfig.json -type f 2>/dev/null | sort | xargs sha256sum) | sha256sum | cut -d' ' -f1)
  if [ -f "$dir/dist/.genservice-stamp" ] && [ "$(cat "$dir/dist/.genservice-stamp")" = "$want" ]; then
    return 0
  fi
  say "building the web editor (npm run build in $dir)"
  (cd "$dir" && npm run build --silent >/dev/null)
  echo "$want" > "$dir/dist/.genservice-stamp"
}

install_debian_packages
install_python_packages
install_node_tools
build_editor
say "ready ($VENV)"
