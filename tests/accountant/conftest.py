"""Fixtures shared by the accountant tests."""

import pytest

from accountant.clones import fused


@pytest.fixture
def kernels_on():
    """The compiled kernels switched on for one test (off again afterwards)."""
    was = fused.available()
    assert fused.use(True)
    yield
    fused.use(was)
