"""The test groups of tests/conftest.py reach pytest-xdist's scheduler."""

import pytest


def test_a_test_file_is_one_xdist_group(request: pytest.FixtureRequest) -> None:
    """xdist schedules by the node id its own hook suffixes with the group; a grouping hook that
    ran after it would leave the suffix out, and a file's tests would scatter over the workers
    (each then building what the file shares, and the Docker tests running side by side)."""
    if not getattr(request.config.option, "loadgroup", False):
        pytest.skip("not in a pytest-xdist worker with --dist loadgroup (e.g. -n 0)")
    assert request.node._nodeid.endswith("@tests/test_xdist_groups.py")
