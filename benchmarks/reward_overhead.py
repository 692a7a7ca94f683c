"""What applying a contract reward costs: env steps/s raw vs with the task's human reward.

For every built-in task and N in (1, 8) it times three vectorised environments side by side:

- raw: `DummyVecEnv` of N `gym.make` environments, no wrappers of ours;
- contract: the training path, as the worker runs it for PPO: named state fields and
  `ContractRewardVecEnv(defer=True)`, with the task's human reward in contract form running in
  its own confined reward process (`RewardProcess`); the pending rewards are taken every
  rollout (the task's PPO `n_steps` vectorised steps, and at the end of each block), one
  exchange each, as `DeferredRewardRolloutBuffer` does;
- in-process: the same reward called in this process (`InProcessReward`), for reference: what
  the exchange with the reward process adds on top of computing the reward at all.

All step through the same pre-sampled random actions (sampling is not timed). Blocks of steps
alternate between the arms so that load from other processes hits them alike; the overhead is
the median over rounds of (contract time / raw time - 1), where time is the CPU time of this
process plus that of the reward process (the work the step costs, wherever it runs). Run:

    .venv/bin/python benchmarks/reward_overhead.py [--tasks cartpole,halfcheetah] [--rounds 7]

Writes benchmarks/results/reward_overhead.json and .md (see docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv

from rewardsmith.envs import list_tasks, load_task
from rewardsmith.envs.adapter import TaskAdapter
from rewardsmith.reward.loader import load_reward
from rewardsmith.rl.reward_process import RewardProcess
from rewardsmith.rl.sb3.vec_reward import ContractRewardVecEnv, InProcessReward, make_vec_env

RESULTS = Path(__file__).parent / "results"
MUJOCO = ("halfcheetah", "hopper", "walker2d", "ant", "humanoid")
TARGET = 0.10  # the target: under 10% overhead at N = 8 for the MuJoCo tasks


@dataclass
class Row:
    """One (task, N) measurement: the three arms' rates and the contract arm's overhead."""

    task: str
    n_envs: int
    raw_steps_per_s: float
    contract_steps_per_s: float
    in_process_steps_per_s: float
    overhead: float  # median over rounds of contract time / raw time - 1
    in_process_overhead: float
    overhead_min: float
    overhead_max: float
    block_steps: int  # vectorised steps per timed block (x n_envs env steps)
    rounds: int


def raw_env(adapter: TaskAdapter, n_envs: int, seed: int) -> DummyVecEnv:
    """The baseline: the task's environments with none of our wrappers."""
    venv = DummyVecEnv([adapter.make_env for _ in range(n_envs)])
    venv.seed(seed)
    return venv


def in_process_env(adapter: TaskAdapter, n_envs: int, seed: int, reward_dir: Path) -> VecEnv:
    """The human reward called in this process, step by step: the cost of the reward alone."""
    path = reward_dir / f"{adapter.id}_human.py"
    path.write_text(adapter.reward_source("human") or "")
    reward = InProcessReward(load_reward(path), str(path))
    return ContractRewardVecEnv(make_vec_env(adapter, n_envs, seed), reward)


def contract_env(
    adapter: TaskAdapter, n_envs: int, seed: int
) -> tuple[ContractRewardVecEnv, RewardProcess]:
    """The worker's PPO path: deferred rewards from a confined reward process (close it after)."""
    source = adapter.reward_source("human") or ""
    reward = RewardProcess(source, "reward.py", adapter.schema.names)
    return ContractRewardVecEnv(make_vec_env(adapter, n_envs, seed), reward, defer=True), reward


def rollout_steps(adapter: TaskAdapter) -> int:
    """Vectorised steps per PPO rollout for this task (SB3's default where the task sets none)."""
    return int(adapter.training.hyperparams.get("ppo", {}).get("n_steps", 2048))


def tree_cpu_s(pid: int) -> float:
    """CPU seconds used so far by process `pid` and all its descendants (read from /proc)."""
    total, stack = 0.0, [pid]
    tick = os.sysconf("SC_CLK_TCK")
    while stack:
        current = stack.pop()
        try:
            fields = Path(f"/proc/{current}/stat").read_text().rsplit(")", 1)[1].split()
            children = Path(f"/proc/{current}/task/{current}/children").read_text().split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / tick
        stack += [int(c) for c in children]
    return total


def time_block(
    venv: VecEnv, actions: np.ndarray, helper: int | None = None, rollout: int = 0
) -> float:
    """CPU seconds of this process (and of the reward process `helper`) for len(actions)
    vectorised steps (auto-resets included); a deferring env's rewards are taken every
    `rollout` steps and at the end.

    CPU time rather than wall time: the machines are shared, and CPU time counts only the work
    these processes did, so other jobs' load barely moves the ratio.
    """
    helper_start = tree_cpu_s(helper) if helper else 0.0
    start = time.process_time()
    for index, action in enumerate(actions, 1):
        venv.step(action)
        if rollout and index % rollout == 0:
            venv.take_totals()  # type: ignore[attr-defined]
    if rollout:
        venv.take_totals()  # type: ignore[attr-defined]
    spent = time.process_time() - start
    return spent + (tree_cpu_s(helper) - helper_start if helper else 0.0)


def sample_actions(space: gym.Space[Any], n_envs: int, steps: int, seed: int) -> np.ndarray:
    """Seeded random actions `[steps, n_envs, ...]`, drawn before timing so no arm pays for them."""
    space.seed(seed)
    return np.stack([np.stack([space.sample() for _ in range(n_envs)]) for _ in range(steps)])


def measure(
    adapter: TaskAdapter, n_envs: int, rounds: int, block_s: float, reward_dir: Path
) -> Row:
    """The three arms on the same actions, in rounds of blocks whose order rotates each round."""
    contract, reward = contract_env(adapter, n_envs, 0)
    envs = {
        "raw": raw_env(adapter, n_envs, 0),
        "contract": contract,
        "in_process": in_process_env(adapter, n_envs, 0, reward_dir),
    }
    helpers = {"contract": reward.process.pid}
    rollouts = {"contract": rollout_steps(adapter)}
    for venv in envs.values():
        venv.reset()
    # Size blocks from a warm-up so each takes about block_s on the raw environment.
    probe = sample_actions(envs["raw"].action_space, n_envs, 50, 1)
    time_block(envs["contract"], probe, rollout=rollouts["contract"])
    time_block(envs["in_process"], probe)
    per_step = time_block(envs["raw"], probe) / len(probe)
    # Long enough blocks that /proc's 10 ms clock ticks for the reward process do not matter.
    block = max(200, int(block_s / per_step))
    actions = sample_actions(envs["raw"].action_space, n_envs, block, 2)
    times: dict[str, list[float]] = {name: [] for name in envs}
    names = list(envs)
    for r in range(rounds):
        for name in names[r % 3 :] + names[: r % 3]:
            times[name].append(
                time_block(envs[name], actions, helpers.get(name), rollouts.get(name, 0))
            )
    for venv in envs.values():
        venv.close()
    reward.close()

    def ratios(arm: str) -> list[float]:
        return [c / r for c, r in zip(times[arm], times["raw"], strict=True)]

    env_steps = block * n_envs
    return Row(
        task=adapter.id,
        n_envs=n_envs,
        raw_steps_per_s=env_steps / statistics.median(times["raw"]),
        contract_steps_per_s=env_steps / statistics.median(times["contract"]),
        in_process_steps_per_s=env_steps / statistics.median(times["in_process"]),
        overhead=statistics.median(ratios("contract")) - 1.0,
        in_process_overhead=statistics.median(ratios("in_process")) - 1.0,
        overhead_min=min(ratios("contract")) - 1.0,
        overhead_max=max(ratios("contract")) - 1.0,
        block_steps=block,
        rounds=rounds,
    )


def markdown(rows: list[Row], meta: dict[str, Any]) -> str:
    """The table as results/reward_overhead.md shows it, MuJoCo N = 8 rows over target marked."""
    lines = [
        "# Reward overhead: env steps/s raw vs with the contract human reward",
        "",
        f"Measured {meta['date']} on {meta['machine']} ({meta['cpus']} CPUs, load average at the end "
        f"{meta['load_average']}), Python {meta['python']}, numpy {meta['numpy']}, "
        f"gymnasium {meta['gymnasium']}. {meta['rounds']} interleaved rounds of "
        f"~{meta['block_s']} s blocks; overhead = median of (contract time / raw time - 1), "
        "range in brackets.",
        "",
        "| task | N | raw steps/s | contract steps/s | ratio | overhead | in-process overhead |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        ratio = row.contract_steps_per_s / row.raw_steps_per_s
        flag = " *" if row.task in MUJOCO and row.n_envs == 8 and row.overhead >= TARGET else ""
        spread = f"[{row.overhead_min:+.0%}, {row.overhead_max:+.0%}]"
        lines.append(
            f"| {row.task} | {row.n_envs} | {row.raw_steps_per_s:,.0f} "
            f"| {row.contract_steps_per_s:,.0f} | {ratio:.2f} "
            f"| {row.overhead:+.1%} {spread}{flag} | {row.in_process_overhead:+.1%} |"
        )
    mujoco_n8 = [r for r in rows if r.task in MUJOCO and r.n_envs == 8]
    if mujoco_n8:
        worst = max(mujoco_n8, key=lambda r: r.overhead)
        verdict = "met" if worst.overhead < TARGET else "MISSED (rows marked *)"
        lines += [
            "",
            f"Target (< {TARGET:.0%} at N = 8 for the MuJoCo tasks): {verdict}; "
            f"worst {worst.task} at {worst.overhead:+.1%}.",
        ]
    return "\n".join(lines) + "\n"


def main() -> int:
    """Every (task, N) pair, one after the other, then the .json and .md with the machine's load."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tasks", default=",".join(list_tasks()), help="comma-separated task ids")
    parser.add_argument("--n-envs", default="1,8", help="comma-separated N values")
    parser.add_argument("--rounds", type=int, default=15, help="interleaved raw/contract rounds")
    parser.add_argument("--block-s", type=float, default=0.15, help="seconds per timed raw block")
    parser.add_argument("--out", type=Path, default=RESULTS, help="folder for the .json and .md")
    args = parser.parse_args()

    rows = []
    with tempfile.TemporaryDirectory() as reward_dir:
        for task_id in args.tasks.split(","):
            adapter = load_task(task_id)
            for n_envs in map(int, args.n_envs.split(",")):
                row = measure(adapter, n_envs, args.rounds, args.block_s, Path(reward_dir))
                rows.append(row)
                print(
                    f"{row.task:24s} N={row.n_envs}  raw {row.raw_steps_per_s:9,.0f}/s  "
                    f"contract {row.contract_steps_per_s:9,.0f}/s  overhead {row.overhead:+.1%} "
                    f"(in-process {row.in_process_overhead:+.1%})",
                    flush=True,
                )
    meta = {
        "date": dt.datetime.now().strftime("%Y-%m-%d %H:%M"),
        "machine": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
        "load_average": " ".join(f"{x:.2f}" for x in os.getloadavg()),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "gymnasium": gym.__version__,
        "rounds": args.rounds,
        "block_s": args.block_s,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "reward_overhead.json").write_text(
        json.dumps({"meta": meta, "rows": [asdict(r) for r in rows]}, indent=2) + "\n"
    )
    (args.out / "reward_overhead.md").write_text(markdown(rows, meta))
    print(f"wrote {args.out / 'reward_overhead.json'} and {args.out / 'reward_overhead.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
