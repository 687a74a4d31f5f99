#!/bin/bash
# Per-test attribution, pytest: profile `python3 -m pytest -v` on examples/frameworks/pytest
# (four tests of known cost in two files) with the command on a pty (--pty), and check each
# test is reported under its node id ("test_mixing.py::test_large") with a share within 5
# points of its measured CPU time. CPython 3.11 leaves no Python frames in native stacks, so
# ciprof knows the tests only from pytest -v's output; pytest has no parallel mode of its own.
. "$(dirname "$0")/lib.sh"
. "$CIPROF_SRC/examples/frameworks/harness.sh"

# Debian's python3-pytest serves /usr/bin/python3; a python3 earlier on PATH (pyenv, venv)
# may lack pytest.
PYTHON=python3
python3 -c 'import pytest' >/dev/null 2>&1 || PYTHON=/usr/bin/python3
fw_require python3-pytest "$PYTHON" -c 'import pytest'
fw_build pytest
cd "$FW_OUT" || fail "cannot enter $FW_OUT"
fw_profile serial --pty -- "$PYTHON" -m pytest -v -p no:cacheprovider
# Debian's CPython has no frame pointers, so under the perf backend every stack stops short
# in python3.11: the interpreter's, not a build to fix, and the warning says so.
if ! grep -q "sampling with the LD_PRELOAD backend" "$TMP/serial.err"; then
	expect_grep "the short-stack warning names the interpreter" "$TMP/serial.err" \
		"Python code runs inside its interpreter"
fi
# Without -v and --pty pytest names no test: every sample is outside tests, and ciprof says
# how to fix it.
run_capture quiet "$CIPROF" run --no-store --no-pty -- "$PYTHON" -m pytest -q -p no:cacheprovider
expect_rc "pytest -q without --pty" 0 quiet
expect_grep "the hint for a pytest run without test names" "$TMP/quiet.err" \
	"no sample was attributed to a test: pytest names its tests to ciprof only with -v (not given here), on a terminal: --pty"
finish
