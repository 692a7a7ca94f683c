"""The trajectory bank: recorded episodes whose order the task's fitness fixes.

The preference check scores these episodes with a candidate reward and compares the two orders,
so the bank needs a spread of fitness, from clearly bad to the best seen. It is seeded at the start
of a run from cheap rollouts in the orchestrator (no reward code runs there): uniform random
actions, sticky and biased random actions, and random linear policies, which on many tasks range
from hopeless to decent. Every trained policy's evaluation episodes are added after training.

On disk, in `<run>/bank/`: `bank.npz` in the `sandbox.trajectories` format (float32 states) and
`bank.json` with each episode's source and the sources ever added (so a resume adds nothing twice).
The bank is capped; what is kept keeps the spread of fitness (see `keep_indices`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from rewardsmith.envs.adapter import Episode, TaskAdapter
from rewardsmith.jobs.records import read_trajectories
from rewardsmith.rl.rollout import Policy, random_policy, rollout_episodes
from rewardsmith.rl.trajectories import load_episodes, save_episodes
from rewardsmith.runs.atomic import fsync_dir
from rewardsmith.runs.layout import BANK_ARRAYS, BANK_DIR, BANK_META
from rewardsmith.runs.schema import read_record, write_record
from rewardsmith.sandbox.worker_files import WorkerFileError

DEFAULT_CAP = 200  # episodes; the scorer's cost grows with it, and 200 give ~20k pairs
MAX_TRANSITIONS = 100_000  # a second cap, for long-episode tasks (MuJoCo: 1,000 steps an episode)
FITNESS_BINS = 10

Record = tuple[Episode, float, bool | None]


@dataclass
class BankInfo:
    """What the rest of the loop needs to know about the bank without loading it."""

    size: int
    version: int
    sources: list[str]


def _scalar_series(values: np.ndarray) -> np.ndarray:
    """A field's per-step values as scalars (vector fields by their norm)."""
    return np.linalg.norm(values, axis=1) if values.ndim > 1 else values


def episode_features(
    records: list[Record], magnitudes: Collection[str] | None = None
) -> dict[str, np.ndarray]:
    """Per-episode mean of each field after the reset state, and of its magnitude (`|field|`)
    where the field takes both signs: the mean of a pole angle says little, its size a lot.

    `magnitudes` names the fields to add `|field|` for; by default those that take both signs in
    `records`. Pass it to give groups that are compared the same features.
    """
    features: dict[str, np.ndarray] = {}
    if not records:
        return features
    for name in records[0][0].states:
        series = [
            _scalar_series(e.states[name][1:] if len(e.states[name]) > 1 else e.states[name])
            for e, _, _ in records
        ]
        features[name] = np.array([float(np.mean(s)) for s in series])
        both_signs = (
            name in magnitudes
            if magnitudes is not None
            else any(np.any(s < 0) for s in series) and any(np.any(s > 0) for s in series)
        )
        if both_signs:
            features[f"|{name}|"] = np.array([float(np.mean(np.abs(s))) for s in series])
    return features


def keep_indices(fitness: np.ndarray, cap: int, bins: int = FITNESS_BINS) -> np.ndarray:
    """Which episodes to keep: `cap` of them, spread evenly over equal-width fitness bins.

    Capacity is shared out by water-filling, so a sparse bin (the few good episodes early on, the
    few bad ones late) keeps all it has and crowded bins share the rest. Within a bin the newest
    episodes (highest index) win: they come from the latest policies, nearest the next candidates.
    """
    n = len(fitness)
    if n <= cap:
        return np.arange(n)
    low, high = float(np.min(fitness)), float(np.max(fitness))
    if high - low < 1e-12:
        return np.arange(n - cap, n)
    which = np.minimum(((fitness - low) / (high - low) * bins).astype(int), bins - 1)
    members = [np.flatnonzero(which == b) for b in range(bins)]
    counts = np.array([len(m) for m in members])
    quota = np.zeros(bins, dtype=int)
    left = cap
    while left > 0:
        open_bins = np.flatnonzero(quota < counts)
        share = max(left // len(open_bins), 1)
        for b in open_bins:
            take = min(share, counts[b] - quota[b], left)
            quota[b] += take
            left -= take
            if left == 0:
                break
    kept = [m[len(m) - q :] for m, q in zip(members, quota, strict=True) if q > 0]
    return np.sort(np.concatenate(kept))


class TrajectoryBank:
    """One run's bank directory; not thread-safe (only the runner and the analyze node write)."""

    def __init__(
        self, directory: Path, cap: int = DEFAULT_CAP, max_transitions: int = MAX_TRANSITIONS
    ) -> None:
        self.directory = Path(directory)
        self.cap = cap
        self.max_transitions = max_transitions

    @property
    def path(self) -> Path:
        """The episodes (`bank.npz`): the one bank file the sandboxed scorer is given."""
        return self.directory / BANK_ARRAYS

    @property
    def meta_path(self) -> Path:
        """Each kept episode's source and every source ever added (`bank.json`)."""
        return self.directory / BANK_META

    def exists(self) -> bool:
        """Both files are there: a bank whose first write was cut short counts as none."""
        return self.path.exists() and self.meta_path.exists()

    def meta(self) -> dict[str, Any]:
        """The bookkeeping record; an empty bank's (version 0, no sources) before the first add."""
        if not self.meta_path.exists():
            return {"version": 0, "sources": [], "added": [], "dropped": 0}
        return read_record(self.meta_path)

    def info(self) -> BankInfo:
        """Size, version and sources from `bank.json` alone, without loading any episode."""
        meta = self.meta()
        return BankInfo(
            size=len(meta["sources"]), version=int(meta["version"]), sources=list(meta["sources"])
        )

    def load(self) -> list[Record]:
        """Every kept episode with its fitness and success ([] before the first add); read
        unchecked, since only the orchestrator writes this file."""
        return load_episodes(self.path) if self.path.exists() else []

    def has(self, source: str) -> bool:
        """Whether `source` was ever added, even if the cap has since dropped all its episodes."""
        return source in self.meta()["added"]

    def add(self, records: list[Record], source: str, labels: list[str] | None = None) -> int:
        """Add episodes from `source` (a candidate key, or "seed"), then apply the cap.

        `labels` name each episode's policy (default: the source). Returns how many episodes the
        bank holds afterwards. Adding a source twice does nothing, so a resumed run can re-add.
        """
        meta = self.meta()
        if source in meta["added"] or not records:
            return len(meta["sources"])
        merged = self.load() + records
        sources = list(meta["sources"]) + (labels or [source] * len(records))
        keep = self._keep([fitness for _, fitness, _ in merged], [e.length for e, _, _ in merged])
        meta["dropped"] = int(meta.get("dropped", 0)) + len(merged) - len(keep)
        merged = [merged[i] for i in keep]
        meta["sources"] = [sources[i] for i in keep]
        meta["added"] = [*meta["added"], source]
        meta["version"] = int(meta["version"]) + 1
        self._write(merged, meta)
        return len(merged)

    def add_file(self, trajectories: Path, source: str) -> int:
        """Add a trained policy's evaluation episodes (`eval/trajectories.npz`). A sandboxed
        program wrote that file: it is read as one (`read_trajectories`), and skipped if bad."""
        if self.has(source):
            return self.info().size
        try:
            records = read_trajectories(trajectories.parent, trajectories.name)
        except WorkerFileError:
            return self.info().size
        return self.add(records, source)

    def _keep(self, fitness: list[float], lengths: list[int]) -> list[int]:
        values = np.asarray(fitness, dtype=np.float64)
        cap = self.cap
        while True:
            keep = keep_indices(values, cap)
            if cap <= 10 or sum(lengths[i] for i in keep) <= self.max_transitions:
                return [int(i) for i in keep]
            cap = int(cap * 0.8)

    def _write(self, records: list[Record], meta: dict[str, Any]) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        temp = self.path.with_suffix(".tmp.npz")
        save_episodes(
            temp, [e for e, _, _ in records], [f for _, f, _ in records], [s for _, _, s in records]
        )
        with temp.open("rb") as written:  # durable before it replaces the bank
            os.fsync(written.fileno())
        os.replace(temp, self.path)
        fsync_dir(self.directory)
        write_record(self.meta_path, meta)


# --- seeding ---------------------------------------------------------------------------------


def _sticky_policy(space: gym.Space, seed: int, repeat: float = 0.9) -> Policy:
    """Random actions held for several steps: longer, more directed motion than uniform noise."""
    rng = np.random.default_rng(seed)
    space.seed(seed)
    last: list[np.ndarray] = []

    def act(obs: np.ndarray) -> np.ndarray:
        fresh = np.stack([space.sample() for _ in range(len(obs))])
        if last and len(last[0]) == len(obs):
            hold = rng.random(len(obs)) < repeat
            fresh[hold] = last[0][hold]
        last[:] = [fresh]
        return fresh

    return act


def _biased_policies(space: gym.Space, seed: int) -> list[tuple[str, Policy]]:
    """Random actions pulled towards one action (discrete) or one end of the box (continuous)."""
    rng = np.random.default_rng(seed)
    if isinstance(space, gym.spaces.Discrete) and int(space.n) <= 4:
        n = int(space.n)

        def prefer(a: int) -> Policy:
            def act(obs: np.ndarray) -> np.ndarray:
                return np.where(rng.random(len(obs)) < 0.7, a, rng.integers(0, n, len(obs)))

            return act

        return [(f"biased_{a}", prefer(a)) for a in range(n)]
    if isinstance(space, gym.spaces.Box):
        low, high = (
            np.asarray(space.low, dtype=np.float64),
            np.asarray(space.high, dtype=np.float64),
        )
        low, high = np.clip(low, -10, 10), np.clip(high, -10, 10)

        def towards(target: np.ndarray) -> Policy:
            def act(obs: np.ndarray) -> np.ndarray:
                noise = rng.uniform(low, high, size=(len(obs), *low.shape))
                return (0.5 * noise + 0.5 * target).astype(space.dtype)

            return act

        return [
            ("biased_low", towards(low)),
            ("biased_high", towards(high)),
            ("still", towards((low + high) / 2)),
        ]
    return []


def _linear_policy(space: gym.Space, obs_dim: int, seed: int) -> Policy:
    """A random linear policy (as in random search for RL): sometimes decent, often not."""
    rng = np.random.default_rng(seed)
    if isinstance(space, gym.spaces.Discrete):
        weights = rng.normal(size=(obs_dim, int(space.n)))
        return lambda obs: np.argmax(
            np.asarray(obs, dtype=np.float64).reshape(len(obs), -1) @ weights, axis=1
        )
    assert isinstance(space, gym.spaces.Box)
    low, high = space.low, space.high
    weights = rng.normal(size=(obs_dim, int(np.prod(space.shape)))) / np.sqrt(obs_dim)
    scale = np.clip((high - low) / 2, 0, 10).reshape(-1)
    centre = np.clip((high + low) / 2, -10, 10).reshape(-1)

    def act(obs: np.ndarray) -> np.ndarray:
        raw = np.tanh(np.asarray(obs, dtype=np.float64).reshape(len(obs), -1) @ weights)
        return (centre + scale * raw).reshape(len(obs), *space.shape).astype(space.dtype)

    return act


def seed_policies(
    adapter: TaskAdapter, seed: int, n_linear: int = 8
) -> list[tuple[str, Policy, int]]:
    """(name, policy, episodes) for the seed rollouts of a task."""
    env = adapter.make_env()
    space, obs_space = env.action_space, env.observation_space
    env.close()
    policies: list[tuple[str, Policy, int]] = [
        ("random", random_policy(adapter, seed), 8),
        ("sticky", _sticky_policy(space, seed + 1), 4),
    ]
    policies += [(name, policy, 3) for name, policy in _biased_policies(space, seed + 2)]
    if isinstance(obs_space, gym.spaces.Box) and isinstance(
        space, gym.spaces.Discrete | gym.spaces.Box
    ):
        obs_dim = int(np.prod(obs_space.shape))
        policies += [
            (f"linear_{i}", _linear_policy(space, obs_dim, seed + 100 + i), 2)
            for i in range(n_linear)
        ]
    return policies


def seed_bank(
    adapter: TaskAdapter,
    bank: TrajectoryBank,
    seed: int = 0,
    progress: Callable[[str], None] | None = None,
) -> BankInfo:
    """Fill an empty bank from cheap seed rollouts; a bank that exists is left as it is."""
    if bank.exists():
        return bank.info()
    records: list[Record] = []
    labels: list[str] = []
    for i, (name, policy, n) in enumerate(seed_policies(adapter, seed)):
        episodes = rollout_episodes(adapter, policy, n, seed + 1_000 * (i + 1))
        records += [(e, adapter.fitness(e), adapter.success(e)) for e in episodes]
        labels += [f"seed:{name}"] * n
    bank.add(records, "seed", labels)
    if progress is not None:
        fitness = [f for _, f, _ in records]
        progress(
            f"trajectory bank: {len(records)} seed episodes, "
            f"fitness {min(fitness):.4g} to {max(fitness):.4g}"
        )
    return bank.info()


def bank_for(run_path: Path) -> TrajectoryBank:
    """The bank of the run at `run_path`, with the default caps (it may not exist yet)."""
    return TrajectoryBank(run_path / BANK_DIR)
