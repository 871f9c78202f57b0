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
python -m pytest -q "$@"
