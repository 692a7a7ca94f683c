"""Shared fixtures: the scripted LLM server (test equipment), the network guard, and a cache
folder of the session's own."""

from collections.abc import Iterator

import pytest

from rewardsmith.jax_backend.evaluator_cache import CACHE_ENV
from tests.llm_fixtures import no_remote_network, scripted_llm  # noqa: F401


@pytest.fixture(autouse=True, scope="session")
def session_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Caches (the JAX evaluator's compiled programs) go to the session's temporary folder, never
    the user's ~/.cache; the session's tests share them, as a user's runs would."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(CACHE_ENV, str(tmp_path_factory.mktemp("cache")))
        # A learner built in the test process makes a logger folder, by default in /tmp.
        patch.setenv("SB3_LOGDIR", str(tmp_path_factory.mktemp("sb3_logs")))
        yield
