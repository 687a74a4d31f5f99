"""Two pytest tests of known cost; the names ciprof should report are the node ids:
test_mixing.py::test_tiny and test_mixing.py::test_large."""
from fwwork import run_test


def test_tiny(nodeid):
    assert run_test(nodeid, 15) != 0


def test_large(nodeid):
    assert run_test(nodeid, 60) != 0
