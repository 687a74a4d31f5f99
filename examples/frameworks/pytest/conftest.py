"""Gives each test its pytest node id ("test_file.py::test_name"), the name ciprof reports."""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))


@pytest.fixture
def nodeid(request):
    return request.node.nodeid
