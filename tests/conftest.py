"""What every test runs with: the engine started as its entry points start it (../conftest.py)."""

import pytest

from tests.engine import ngshare_hub


@pytest.fixture(scope="session")
def ngshare_env(tmp_path_factory):
    """ngshare's own environment, built once a worker (``make ngshare-env``): the engine's
    ngshare test and the lab's ngshare hub share it (and one worker: ../conftest.py)."""
    return ngshare_hub.build_env(tmp_path_factory.mktemp("ngshare") / "env")
