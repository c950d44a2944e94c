"""Fixtures shared by the accountant tests."""

import pytest

from accountant.clones import compiled


@pytest.fixture
def kernels_on():
    """The compiled kernels switched on for one test (off again afterwards)."""
    was = compiled.available()
    assert compiled.use(True)
    yield
    compiled.use(was)
