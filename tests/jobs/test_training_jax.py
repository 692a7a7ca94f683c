"""The JAX backend end to end in the real sandbox: trace, train (Brax PPO), evaluate.

Tiny budgets (one or two PPO updates); most of each test's time is XLA compiling the training
step on CPU (~25 s on two cores).
"""

from __future__ import annotations

import json
import subprocess
import sys
from importlib.util import find_spec
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from rewardsmith import job_spec as files
from rewardsmith.cli import app
from rewardsmith.envs import load_task
from rewardsmith.jobs.training import make_job, train_reward
from rewardsmith.reward.errors import ErrorCategory
from rewardsmith.rl.trajectories import load_episodes
from rewardsmith.sandbox.executor import ProcessSandbox
from rewardsmith.sandbox.types import Limits

# The orchestrator (this process) never imports JAX: only the sandboxed programs do.
pytestmark = pytest.mark.skipif(
    any(find_spec(name) is None for name in ("jax", "gymnax", "brax")),
    reason="the jax extra is not installed: pip install -e '.[jax]'",
)

LIMITS = Limits(wall_s=400)
MARKER = "REWARD-PYTHON-BODY-RAN"
# CartPole's human reward, plus a line that shows wherever the reward's Python runs.
MARKED = (
    "import numpy as np\n\n\n"
    "def compute_reward(state, action, next_state):\n"
    f"    print('{MARKER}', flush=True)\n"
    "    alive = np.ones_like(next_state.pole_angle)\n"
    "    upright = 0.1 * np.cos(next_state.pole_angle)\n"
    "    return alive + upright, {'alive': alive, 'upright': upright}\n"
)
runner = CliRunner()


@pytest.mark.slow
def test_a_reward_trains_on_jax_and_its_python_runs_only_in_the_tracer(tmp_path: Path) -> None:
    adapter = load_task("cartpole")
    job = make_job(adapter, steps=4096, seed=0, backend="jax")
    job.eval_episodes = 3
    outcome = train_reward(adapter, job, MARKED, tmp_path, ProcessSandbox(), LIMITS)
    assert outcome.ok, f"{outcome.error}\n{(tmp_path / 'worker.log').read_text()[-3000:]}"
    assert outcome.steps >= 4096

    # The reward's Python ran in the sandboxed tracer, never in the trainer or the evaluator.
    assert MARKER in (tmp_path / "tracer.log").read_text()
    assert MARKER not in (tmp_path / "worker.log").read_text()
    assert MARKER not in (tmp_path / "evaluator.log").read_text()
    assert (tmp_path / "job" / "reward.jaxexport").stat().st_size > 0

    # The reflection log, in the SB3 worker's format: components summed per episode.
    records = [
        json.loads(line)
        for line in (tmp_path / "job" / files.METRICS_FILE).read_text().splitlines()
    ]
    assert len(records) == 2 and records[-1]["step"] == outcome.steps
    for record in records:
        assert set(record["components"]) == {"alive", "upright"}
        # alive pays 1 per step: its episode sum is the episode length.
        assert record["components"]["alive"] == pytest.approx(record["episode_length"])
        assert record["reward_return"] == pytest.approx(
            sum(record["components"].values()), rel=1e-5
        )
    assert outcome.checkpoints == [
        {k: v for k, v in r.items() if k in outcome.checkpoints[0]} for r in records
    ]

    # Fitness from the reward-free evaluation of the saved parameters.
    assert (tmp_path / "job" / "policy_params.npz").exists()
    assert 8 <= outcome.fitness <= 500
    episodes = load_episodes(tmp_path / "eval" / files.TRAJECTORIES_FILE)
    assert len(episodes) == 6
    for episode, fitness, _ in episodes:
        assert fitness == episode.length  # CartPole's fitness, from the task's own adapter
    assert outcome.fitness == pytest.approx(np.mean([f for _, f, _ in episodes]))


@pytest.mark.slow
def test_an_untraceable_reward_fails_before_training(tmp_path: Path) -> None:
    adapter = load_task("cartpole")
    source = (
        "import numpy as np\n\n\n"
        "def compute_reward(state, action, next_state):\n"
        "    r = np.ones_like(next_state.pole_angle)\n"
        "    r[next_state.pole_angle > 0.1] = 0.0\n"
        "    return r, {'r': r}\n"
    )
    job = make_job(adapter, steps=2048, seed=0, backend="jax")
    outcome = train_reward(adapter, job, source, tmp_path, ProcessSandbox(), LIMITS)
    assert not outcome.ok
    assert outcome.error is not None
    assert outcome.error.category == ErrorCategory.JAX_INCOMPATIBLE
    assert outcome.error.line == 6 and "np.where" in outcome.error.message
    assert not (tmp_path / "job").exists()  # no training was spent on it


@pytest.mark.slow
def test_train_cli_on_the_jax_backend(tmp_path: Path) -> None:
    args = ["train", "cartpole", "--backend", "jax", "--reward", "human", "--steps", "2048"]
    result = runner.invoke(
        app, [*args, "--json", "--sandbox", "process", "--out", str(tmp_path / "job")]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["ok"] is True and data["steps"] >= 2048
    assert set(data["components"]) == {"alive"}
    assert data["fitness"] >= 8


@pytest.mark.slow
def test_the_orchestrator_side_imports_no_jax() -> None:
    """What `train`/`run` load to drive a JAX job (job, tracer and trainer launch, critic, CLI)
    never imports JAX: reward code runs in the sandboxed tracer, JAX in the sandboxed programs."""
    code = (
        "import sys\n"
        "import rewardsmith.cli, rewardsmith.eureka_loop.critic, rewardsmith.eureka_loop.trainer\n"
        "from rewardsmith.envs import load_task\n"
        "from rewardsmith.jobs.training import make_job\n"
        "import rewardsmith.jobs.training_jax, rewardsmith.programs.trace_jax\n"
        "make_job(load_task('cartpole'), steps=None, seed=0, backend='jax')\n"
        "assert 'jax' not in sys.modules, 'the orchestrator imported jax'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_unknown_or_missing_backends_are_one_clear_line(tmp_path: Path) -> None:
    result = runner.invoke(app, ["train", "lunarlander", "--backend", "jax"])
    assert result.exit_code == 1
    assert "has no jax backend" in result.output
    result = runner.invoke(app, ["train", "cartpole", "--backend", "torch"])
    said = " ".join(result.output.replace("│", " ").split())  # a usage error, in Rich's box
    assert result.exit_code == 2 and "'torch' is not one of 'sb3', 'jax'" in said, said
    result = runner.invoke(app, ["train", "cartpole", "--backend", "jax", "--algo", "sac"])
    assert result.exit_code == 1 and "PPO only" in result.output


def test_tasks_lists_each_tasks_backends() -> None:
    result = runner.invoke(app, ["tasks", "--json"])
    assert result.exit_code == 0, result.output
    backends = {task["id"]: task["backends"] for task in json.loads(result.stdout)}
    assert backends["cartpole"] == ["sb3", "jax"]
    assert backends["lunarlander"] == ["sb3"]


@pytest.mark.slow
@pytest.mark.mjx
def test_run_halfcheetah_on_mjx_from_the_cli(tmp_path: Path) -> None:
    """`rewardsmith run halfcheetah --backend jax` end to end (critic, preference check, MJX
    training, reward-free evaluation). Most of its minutes on two cores are XLA compiling."""
    args = ["run", "halfcheetah", "--backend", "jax", "--rounds", "1", "--samples", "1"]
    args += ["--steps", "10240", "--parallel", "1", "--no-evaluate", "--sandbox", "process"]
    result = runner.invoke(app, [*args, "--runs-dir", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["best_fitness"] is not None
    [candidate] = sorted(tmp_path.glob("*/round_00/cand_00"))
    outcome = json.loads((candidate / "outcome.json").read_text())
    log = (candidate / "worker.log").read_text()[-3000:]
    assert outcome["ok"] and outcome["backend"] == "jax", f"{outcome['error']}\n{log}"
    assert outcome["steps"] >= 10240
    assert set(outcome["checkpoints"][-1]["components"]) == {"forward", "control"}
    assert outcome["checkpoints"][-1]["episode_length"] == 1000  # HalfCheetah never terminates
    episodes = load_episodes(candidate / "eval" / files.TRAJECTORIES_FILE)
    assert episodes
    for episode, fitness, _ in episodes:
        x = episode.states["x_position"]
        assert fitness == pytest.approx(x[-1] - x[0], abs=1e-4)  # the SB3 task's fitness
        assert episode.states["joint_angles"].shape == (1001, 6)
    assert outcome["fitness"] == pytest.approx(np.mean([f for _, f, _ in episodes]), abs=1e-4)
