"""Candidates train on a real multi-node Ray cluster (head and two workers on 127.0.0.1).

The nodes share this machine's cores, but each is a separate raylet with its own worker
processes: a job placed on a node runs there, and removing a node kills what ran on it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rewardsmith.cluster.transfer import TransferError, pack_dir, unpack_into
from rewardsmith.envs import load_task

# Before Ray is imported (it reads these once): every address on loopback, where Ray would
# otherwise take the machine's own IP, and no usage reports.
os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
ray = pytest.importorskip("ray")
cluster_utils = pytest.importorskip("ray.cluster_utils")

pytestmark = pytest.mark.slow

CARTPOLE = load_task("cartpole")
LOCAL = {"node_ip_address": "127.0.0.1", "include_dashboard": False}


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    """Head (no CPUs: only the driver's bookkeeping) and two one-CPU worker nodes.

    The in-process head node takes SIGTERM over (it kills its processes and exits): the test
    session's handlers are put back, so later tests that signal this process stay in charge."""
    kept = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    nodes = cluster_utils.Cluster(initialize_head=True, head_node_args={"num_cpus": 0, **LOCAL})
    for sig, handler in kept.items():
        signal.signal(sig, handler)
    for _ in range(2):
        nodes.add_node(num_cpus=1, **LOCAL)
    nodes.wait_for_nodes()
    yield nodes
    ray.shutdown()
    nodes.shutdown()
    for sig, handler in kept.items():
        signal.signal(sig, handler)


@pytest.fixture(scope="module")
def executor(cluster: Any) -> Iterator[Any]:
    from rewardsmith.cluster.ray_executor import RayExecutor

    remote = RayExecutor(cluster.address, sandbox="process")
    yield remote
    remote.close()


def _job(steps: int, seed: int = 0) -> Any:
    from rewardsmith.jobs.training import make_job

    return make_job(CARTPOLE, steps=steps, seed=seed)


def test_candidates_train_on_the_cluster_and_land_in_the_store(
    executor: Any, tmp_path: Path
) -> None:
    human = CARTPOLE.reward_source("human")
    outcomes: dict[int, Any] = {}

    def train(i: int) -> None:
        outcomes[i] = executor.train(CARTPOLE, _job(2048, seed=i), human, tmp_path / f"c{i}")

    threads = [threading.Thread(target=train, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for i, outcome in outcomes.items():
        assert outcome.ok, outcome.error
        assert outcome.fitness is not None and outcome.steps >= 2048
        assert outcome.placement["executor"] == "ray" and outcome.placement["attempts"] == 1
        folder = tmp_path / f"c{i}"
        assert outcome.candidate_dir == folder
        for name in ("job/policy.pt", "job/metrics.jsonl", "eval/evaluation.json", "worker.log"):
            assert (folder / name).is_file(), name
        assert "placement" in outcome.to_dict()


def test_a_halving_rung_continues_on_the_cluster(executor: Any, tmp_path: Path) -> None:
    """The saved state travels to the node with the job; the steps add up."""
    from dataclasses import replace

    from rewardsmith.jobs.records import read_training_state

    human = CARTPOLE.reward_source("human")
    first_job = replace(_job(4096), stop_at=2048)
    first = executor.train(CARTPOLE, first_job, human, tmp_path / "rung0")
    assert first.ok and 2048 <= first.steps < 4096, first.error
    state = read_training_state(tmp_path / "rung0" / "job")
    rest = replace(first_job, stop_at=None, start_steps=first.steps)
    second = executor.train(CARTPOLE, rest, human, tmp_path / "rung1", None, None, state)
    assert second.ok and second.steps >= 4096, second.error
    assert second.checkpoints[0]["step"] > first.steps


def test_a_lost_node_reruns_its_job_on_another(cluster: Any, executor: Any, tmp_path: Path) -> None:
    human = CARTPOLE.reward_source("human")
    result: dict[str, Any] = {}
    before = set(ray.get(executor.attempts.all.remote()))
    thread = threading.Thread(
        target=lambda: result.update(
            outcome=executor.train(CARTPOLE, _job(30_000), human, tmp_path / "lost")
        )
    )
    thread.start()
    deadline = time.monotonic() + 120
    started: list[str] = []
    while not started and time.monotonic() < deadline:
        starts = ray.get(executor.attempts.all.remote())
        started = next((nodes for key, nodes in starts.items() if key not in before), [])
        time.sleep(0.5)
    assert started, "the job never started"
    time.sleep(3)  # let it get going
    victim = next(n for n in cluster.worker_nodes if n.node_id == started[0])
    cluster.remove_node(victim)
    cluster.add_node(num_cpus=1, **LOCAL)  # keep two workers for what follows
    thread.join(timeout=600)
    outcome = result["outcome"]
    assert outcome.ok, outcome.error
    assert outcome.placement["attempts"] == 2
    assert outcome.placement["node"] != started[0]
    assert outcome.placement["nodes_tried"][0] == started[0]
    assert any("failed attempt" in w for w in outcome.warnings)
    assert (tmp_path / "lost" / "eval" / "evaluation.json").is_file()


def test_connecting_keeps_the_drivers_sigterm_handler(cluster: Any) -> None:
    """`ray.init` makes SIGTERM a bare exit; the CLI's clean stop must survive connecting."""
    code = (
        "import signal, sys\n"
        "from rewardsmith.cluster.ray_executor import connect\n"
        "mine = lambda signum, frame: None\n"
        "signal.signal(signal.SIGTERM, mine)\n"
        "assert connect(sys.argv[1]) is True\n"
        "assert signal.getsignal(signal.SIGTERM) is mine, signal.getsignal(signal.SIGTERM)\n"
    )
    subprocess.run([sys.executable, "-c", code, cluster.address], check=True, timeout=120)


def test_a_packed_folder_cannot_write_outside_its_destination(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    dest = tmp_path / "dest"
    for name in ("../outside/x", "/etc/x", "a/../../outside/x", ""):
        with pytest.raises(TransferError):
            unpack_into({name: b"x"}, dest)
    dest.mkdir(exist_ok=True)
    os.symlink(outside, dest / "link")
    with pytest.raises(TransferError, match="is a link"):
        unpack_into({"link/x": b"x"}, dest)
    assert not any(outside.iterdir())
    # Packing leaves links and special files behind; regular files round-trip.
    (tmp_path / "src" / "sub").mkdir(parents=True)
    (tmp_path / "src" / "sub" / "f.txt").write_text("data")
    os.symlink("/etc/passwd", tmp_path / "src" / "passwd")
    os.mkfifo(tmp_path / "src" / "fifo")
    packed = pack_dir(tmp_path / "src")
    assert packed == {"sub/f.txt": b"data"}
    with pytest.raises(TransferError, match="hard links"):  # a second name for a host file
        os.link(tmp_path / "src" / "sub" / "f.txt", tmp_path / "second")
        pack_dir(tmp_path / "src")
    unpack_into(packed, tmp_path / "copy")
    assert (tmp_path / "copy" / "sub" / "f.txt").read_text() == "data"


def test_a_killed_driver_resumes_on_the_cluster(
    cluster: Any, executor: Any, tmp_path: Path
) -> None:
    """`rewardsmith run --executor ray`, kill -9 once a candidate finished, then resume on the
    cluster: the finished candidate is not trained again and the rest train on the nodes.

    Three rounds, so that two whole rounds (~25 s) stand between the first outcome and the run's
    end: with two, a loaded CI machine once stalled this test past the run's last candidate."""
    from rewardsmith.eureka_loop.runner import resume_run

    command = [
        *(sys.executable, "-m", "rewardsmith.cli", "run", "cartpole"),
        *("--rounds", "3", "--samples", "2", "--steps", "2048", "--parallel", "2"),
        *("--no-evaluate", "--no-preference-check", "--sandbox", "process"),
        *("--executor", "ray", "--address", cluster.address, "--runs-dir", str(tmp_path)),
    ]
    log = tmp_path / "driver.log"
    with log.open("wb") as out:
        driver = subprocess.Popen(command, start_new_session=True, stdout=out, stderr=out)
    deadline = time.monotonic() + 300
    finished: list[Path] = []
    while not finished and time.monotonic() < deadline and driver.poll() is None:
        finished = sorted(tmp_path.glob("*/round_00/cand_*/outcome.json"))
        time.sleep(0.2)
    assert finished, "no candidate finished on the cluster"
    os.killpg(driver.pid, signal.SIGKILL)
    assert driver.wait() == -signal.SIGKILL, f"the run ended on its own:\n{log.read_text()[-3000:]}"
    kept = {path: path.stat().st_mtime_ns for path in finished}
    run_dir = finished[0].parents[2]
    result = resume_run(run_dir.name, tmp_path, executor=("ray", cluster.address))
    assert [h["round"] for h in result["history"]] == [0, 1, 2]
    for path, mtime in kept.items():
        assert path.stat().st_mtime_ns == mtime  # not trained again
    outcomes = [
        json.loads(p.read_text()) for p in sorted(run_dir.glob("round_*/cand_*/outcome.json"))
    ]
    assert len(outcomes) >= 3 and all(o["placement"]["executor"] == "ray" for o in outcomes)
