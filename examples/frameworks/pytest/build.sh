#!/bin/sh
# Copies the pytest example into OUTDIR (nothing to compile); run it there with
# `python3 -m pytest -v -p no:cacheprovider`. Needs python3-pytest.
set -eu
[ $# -eq 1 ] || { echo "usage: $0 OUTDIR" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$1"
cp "$here"/conftest.py "$here"/fwwork.py "$here"/test_*.py "$1"/
