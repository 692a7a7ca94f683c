"""Shared fixtures: the scripted LLM server (test equipment), the network guard, and a cache
folder of the session's own."""

import os
from collections.abc import Iterator

import pytest

from rewardsmith.jobs.compile_store import CACHE_ENV
from rewardsmith.sandbox.docker_backend import DockerSandbox, docker_status
from rewardsmith.sandbox.executor import ProcessSandbox
from rewardsmith.sandbox.types import Sandbox
from tests.llm_fixtures import no_remote_network, scripted_llm  # noqa: F401

# Runs whose sandbox is not named use the process backend, not `auto` (Docker where it is up):
# the Docker backend is tested where a test names it, and a run that picks Docker on its own
# sweeps orphan containers that a Docker hygiene test, on another worker, planted on purpose.
# `REWARDSMITH_SANDBOX=auto pytest` runs those tests through Docker instead.
os.environ.setdefault("REWARDSMITH_SANDBOX", "process")
# Filming costs each loop run a sandboxed program per round; the tests that are about videos
# (tests/eureka_loop/test_videos.py, tests/jobs/test_video.py) ask for them by name.
os.environ.setdefault("REWARDSMITH_VIDEOS", "none")
os.environ.setdefault("REWARDSMITH_FINALISTS", "1")  # the finals' own tests ask for them
# The JAX tests compile far more than they run (an MJX step compiles for up to a minute on two
# cores, then runs a few dozen times): XLA's cheapest optimisation level compiles them about 40%
# faster, and its older CPU fusion emitters compile MJX's Hopper and HalfCheetah in half the time
# again (an MJX HalfCheetah training worker: 79 s -> 53 s, quiet, 2026-12-06). The sandboxed JAX
# programs get them too (XLA_FLAGS is on the worker's allow-list).
os.environ.setdefault(
    "XLA_FLAGS",
    "--xla_backend_optimization_level=0 --xla_llvm_disable_expensive_passes=true"
    " --xla_cpu_use_fusion_emitters=false",
)


# The files that take longest, measured with two workers (2026-12-07, the README's command, whose
# default leaves out the MJX compiles; `-m mjx` runs humanoid's reward check and the MJX
# HalfCheetah run first): started first, they run beside the many short files instead of after them.
LONGEST_FIRST = (
    "tests/rl/jax/test_human_rewards_jax.py",  # ~130 s with `-m mjx`, a few seconds without
    "tests/jobs/test_training_jax.py",  # ~100 s with `-m mjx`, ~30 s without
    "tests/sandbox/test_bad_rewards.py",  # ~140 s
    "tests/cluster/test_ray_executor.py",  # ~50 s
    "tests/eureka_loop/test_human_judging.py",
    "tests/sandbox/test_runner.py",
    "tests/commands/test_task_file_runs.py",
    "tests/eureka_loop/test_halving.py",
    "tests/eureka_loop/test_resume.py",
    "tests/jobs/test_video.py",
    "tests/envs/test_robotics_tasks.py",
    "tests/jobs/test_video_jax.py",
    "tests/sandbox/test_docker_hygiene.py",
    "tests/jobs/test_compile_store.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The longest files first (a stable sort: each file's own order is kept), so that
    `--dist loadfile` hands them to workers at the start."""
    rank = {path: i for i, path in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))


@pytest.fixture(autouse=True, scope="session")
def session_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Caches (the JAX evaluator's compiled programs) go to the session's temporary folder, never
    the user's ~/.cache; the session's tests share them, as a user's runs would."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(CACHE_ENV, str(tmp_path_factory.mktemp("cache")))
        # A learner built in the test process makes a logger folder, by default in /tmp.
        patch.setenv("SB3_LOGDIR", str(tmp_path_factory.mktemp("sb3_logs")))
        yield


# The `sandbox` fixture: every available backend, Docker skipped with the reason when unusable.
# `process` is the process backend as `auto` would pick it (bubblewrap where it works);
# `process-nobwrap` is the same backend without bubblewrap, confined by Landlock, seccomp and the
# `nobody` uid alone: what a machine with nothing but pip packages gets. The fast tier
# (`-m "not slow"`) runs each check through `process` only.
@pytest.fixture(
    params=[
        "process",
        # The same attacks again through the other backends: the slow tier (CI) runs them all.
        pytest.param("process-nobwrap", marks=pytest.mark.slow),
        pytest.param("docker", marks=[pytest.mark.docker, pytest.mark.slow]),
    ]
)
def sandbox(request: pytest.FixtureRequest) -> Sandbox:
    if request.param == "docker":
        ready, why = docker_status()
        if not ready:
            pytest.skip(f"Docker backend not usable: {why}")
        return DockerSandbox()
    if request.param == "process-nobwrap":
        nobwrap = ProcessSandbox(use_bwrap=False)
        if not nobwrap.confined:
            pytest.skip("no Landlock here: without bubblewrap the process backend refuses")
        return nobwrap
    return ProcessSandbox()
