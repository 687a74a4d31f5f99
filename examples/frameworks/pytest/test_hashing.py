"""Two pytest tests of known cost; the names ciprof should report are the node ids:
test_hashing.py::test_small and test_hashing.py::test_medium."""
from fwwork import run_test


def test_small(nodeid):
    assert run_test(nodeid, 30) != 0


def test_medium(nodeid):
    assert run_test(nodeid, 45) != 0
