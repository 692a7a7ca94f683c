"""The evaluator's compilation cache: only whole, plain entries reach the store, and a second
evaluation of a task compiles nothing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rewardsmith.jobs import compile_store
from rewardsmith.jobs.compile_store import SUBDIR, harvest, store_for

ENTRY = "jit_rollout-" + "ab" * 32 + "-cache"


def test_the_store_is_per_program_and_task_under_the_cache_dir_and_can_be_turned_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(compile_store.CACHE_ENV, str(tmp_path / "cache"))
    assert store_for("halfcheetah") == tmp_path / "cache" / "xla-evaluator" / "halfcheetah"
    assert (tmp_path / "cache" / "xla-evaluator" / "halfcheetah").is_dir()
    assert store_for("../../etc") is None
    assert store_for("halfcheetah", "video") == tmp_path / "cache" / "xla-video" / "halfcheetah"
    with pytest.raises(ValueError, match="evaluator, video"):
        store_for("cartpole", "train_jax")  # a program that runs reward code gets none
    monkeypatch.setenv(compile_store.CACHE_ENV, "off")
    assert store_for("cartpole") is None


def test_harvest_keeps_plain_entries_and_nothing_else(tmp_path: Path) -> None:
    eval_dir, store = tmp_path / "eval", tmp_path / "store"
    private = eval_dir / SUBDIR
    private.mkdir(parents=True)
    store.mkdir()
    secret = tmp_path / "host_secret"
    secret.write_bytes(b"API_KEY=...")
    (private / ENTRY).write_bytes(b"compiled")
    (private / ("jit_link-" + "cd" * 32 + "-cache")).symlink_to(secret)
    os.link(secret, private / ("jit_hardlink-" + "ef" * 32 + "-cache"))
    (private / "not-an-entry.txt").write_bytes(b"x")
    (private / ".incoming-x-cache").mkdir()
    assert harvest(eval_dir, store) == 1
    assert sorted(p.name for p in store.iterdir()) == [ENTRY]
    assert (store / ENTRY).read_bytes() == b"compiled"
    assert not private.exists(), "the evaluator's copy is removed"


def test_harvest_never_replaces_a_stored_entry(tmp_path: Path) -> None:
    eval_dir, store = tmp_path / "eval", tmp_path / "store"
    (eval_dir / SUBDIR).mkdir(parents=True)
    store.mkdir()
    (store / ENTRY).write_bytes(b"first")
    (eval_dir / SUBDIR / ENTRY).write_bytes(b"second")
    assert harvest(eval_dir, store) == 0
    assert (store / ENTRY).read_bytes() == b"first"


def test_harvest_does_not_follow_a_linked_cache_folder(tmp_path: Path) -> None:
    elsewhere, eval_dir, store = tmp_path / "elsewhere", tmp_path / "eval", tmp_path / "store"
    elsewhere.mkdir()
    (elsewhere / ENTRY).write_bytes(b"planted")
    eval_dir.mkdir()
    store.mkdir()
    (eval_dir / SUBDIR).symlink_to(elsewhere)
    assert harvest(eval_dir, store) == 0
    assert list(store.iterdir()) == []
    assert (elsewhere / ENTRY).exists()


@pytest.mark.slow
def test_a_second_evaluation_of_the_task_compiles_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("gymnax")
    from rewardsmith.envs import load_task
    from rewardsmith.jobs.training import make_job, train_reward
    from rewardsmith.jobs.training_jax import evaluate_jax_policy
    from rewardsmith.sandbox.executor import ProcessSandbox
    from rewardsmith.sandbox.types import Limits

    monkeypatch.setenv(compile_store.CACHE_ENV, str(tmp_path / "cache"))
    adapter = load_task("cartpole")
    job = make_job(adapter, steps=1024, seed=0, backend="jax")
    source = adapter.reward_source("human")
    store = tmp_path / "cache" / "xla-evaluator" / "cartpole"
    candidate = tmp_path / "candidate"
    outcome = train_reward(adapter, job, source, candidate, ProcessSandbox(), Limits())
    assert outcome.ok, outcome.error
    first = {p.name: p.stat().st_mtime_ns for p in store.iterdir()}
    assert first, "the first evaluator leaves its compiled programs in the store"
    assert not (candidate / "eval" / SUBDIR).exists()

    # The same policy evaluated again, in a fresh evaluation folder, as a rerun would.
    error, evaluation = evaluate_jax_policy(adapter, job, candidate, ProcessSandbox(), Limits())
    assert error is None, error
    assert not (candidate / "eval" / SUBDIR).exists()
    second = {p.name: p.stat().st_mtime_ns for p in store.iterdir()}
    assert second == first, "the second compiled nothing new and replaced nothing"
    assert evaluation == outcome.evaluation
