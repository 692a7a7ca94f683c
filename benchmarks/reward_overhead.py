"""What applying a contract reward costs: env steps/s raw vs with the task's human reward.

For every built-in task and N in (1, 8) it times two vectorised environments side by side:

- raw: `DummyVecEnv` of N `gym.make` environments, no wrappers of ours;
- contract: the same with `StateFieldsWrapper` (named state fields every step) and
  `ContractRewardVecEnv` running the task's human reward in contract form, checked every step.

Both step through the same pre-sampled random actions (sampling is not timed). Blocks of steps
alternate raw / contract / raw / ... so that load from other processes hits both alike; the
overhead is the median over rounds of (contract time / raw time - 1). Run:

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
from rewardsmith.sandbox.vec_reward import ContractRewardVecEnv, make_vec_env

RESULTS = Path(__file__).parent / "results"
MUJOCO = ("halfcheetah", "hopper", "walker2d", "ant", "humanoid")
TARGET = 0.10  # the target: under 10% overhead at N = 8 for the MuJoCo tasks


@dataclass
class Row:
    task: str
    n_envs: int
    raw_steps_per_s: float
    contract_steps_per_s: float
    overhead: float  # median over rounds of contract time / raw time - 1
    overhead_min: float
    overhead_max: float
    block_steps: int  # vectorised steps per timed block (x n_envs env steps)
    rounds: int


def raw_env(adapter: TaskAdapter, n_envs: int, seed: int) -> DummyVecEnv:
    venv = DummyVecEnv([adapter.make_env for _ in range(n_envs)])
    venv.seed(seed)
    return venv


def contract_env(adapter: TaskAdapter, n_envs: int, seed: int, reward_dir: Path) -> VecEnv:
    path = reward_dir / f"{adapter.id}_human.py"
    path.write_text(adapter.reward_source("human") or "")
    return ContractRewardVecEnv(make_vec_env(adapter, n_envs, seed), load_reward(path), str(path))


def time_block(venv: VecEnv, actions: np.ndarray) -> float:
    """CPU seconds of this process for len(actions) vectorised steps (auto-resets included).

    Process CPU time rather than wall time: the machines are shared, and CPU time counts only
    the work this process did, so other jobs' load barely moves the ratio.
    """
    start = time.process_time()
    for action in actions:
        venv.step(action)
    return time.process_time() - start


def sample_actions(space: gym.Space[Any], n_envs: int, steps: int, seed: int) -> np.ndarray:
    space.seed(seed)
    return np.stack([np.stack([space.sample() for _ in range(n_envs)]) for _ in range(steps)])


def measure(
    adapter: TaskAdapter, n_envs: int, rounds: int, block_s: float, reward_dir: Path
) -> Row:
    envs = {
        "raw": raw_env(adapter, n_envs, 0),
        "contract": contract_env(adapter, n_envs, 0, reward_dir),
    }
    for venv in envs.values():
        venv.reset()
    # Size blocks from a warm-up so each takes about block_s on the raw environment.
    probe = sample_actions(envs["raw"].action_space, n_envs, 50, 1)
    time_block(envs["contract"], probe)
    per_step = time_block(envs["raw"], probe) / len(probe)
    block = max(50, int(block_s / per_step))
    actions = sample_actions(envs["raw"].action_space, n_envs, block, 2)
    times: dict[str, list[float]] = {"raw": [], "contract": []}
    for r in range(rounds):
        order = ("raw", "contract") if r % 2 == 0 else ("contract", "raw")
        for name in order:
            times[name].append(time_block(envs[name], actions))
    for venv in envs.values():
        venv.close()
    ratios = [c / r for c, r in zip(times["contract"], times["raw"], strict=True)]
    env_steps = block * n_envs
    return Row(
        task=adapter.id,
        n_envs=n_envs,
        raw_steps_per_s=env_steps / statistics.median(times["raw"]),
        contract_steps_per_s=env_steps / statistics.median(times["contract"]),
        overhead=statistics.median(ratios) - 1.0,
        overhead_min=min(ratios) - 1.0,
        overhead_max=max(ratios) - 1.0,
        block_steps=block,
        rounds=rounds,
    )


def markdown(rows: list[Row], meta: dict[str, Any]) -> str:
    lines = [
        "# Reward overhead: env steps/s raw vs with the contract human reward",
        "",
        f"Measured {meta['date']} on {meta['machine']} ({meta['cpus']} CPUs, load average at the end "
        f"{meta['load_average']}), Python {meta['python']}, numpy {meta['numpy']}, "
        f"gymnasium {meta['gymnasium']}. {meta['rounds']} interleaved rounds of "
        f"~{meta['block_s']} s blocks; overhead = median of (contract time / raw time - 1), "
        "range in brackets.",
        "",
        "| task | N | raw steps/s | contract steps/s | ratio | overhead |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        ratio = row.contract_steps_per_s / row.raw_steps_per_s
        flag = " *" if row.task in MUJOCO and row.n_envs == 8 and row.overhead >= TARGET else ""
        spread = f"[{row.overhead_min:+.0%}, {row.overhead_max:+.0%}]"
        lines.append(
            f"| {row.task} | {row.n_envs} | {row.raw_steps_per_s:,.0f} "
            f"| {row.contract_steps_per_s:,.0f} | {ratio:.2f} "
            f"| {row.overhead:+.1%} {spread}{flag} |"
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
                    f"contract {row.contract_steps_per_s:9,.0f}/s  overhead {row.overhead:+.1%}",
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
