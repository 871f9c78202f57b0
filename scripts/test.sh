#!/usr/bin/env bash
# Set up a fresh machine for the test suite and run it (the README's test command).
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install -q -r requirements-dev.txt
python -m pip install -q -r requirements-ray.txt  # optional extra; tests/test_ray.py needs it
if ! command -v chromium >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1; then
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
    $SUDO apt-get update -q >/dev/null && $SUDO apt-get install -y -q chromium >/dev/null
  fi
fi
# axe-core from the npm registry, for tests/test_browser_phone_a11y.py (git-ignored .npm-tools/;
# without it that test is skipped, so a failed install fails here)
if command -v npm >/dev/null 2>&1; then
  npm install --no-save --no-audit --no-fund --silent --prefix .npm-tools axe-core@4
else
  echo "npm not found: the axe-core accessibility test will be skipped" >&2
fi
# two pytest processes, each test file whole in one (its module's server and browser shared):
# the 2-core host's suite in about 14 minutes instead of 18-19 (2026-11-27); `-n 0` runs it in one
python -m pytest -q -n 2 --dist loadfile --durations=30 "$@"
