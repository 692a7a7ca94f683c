"""Multi-fidelity candidate training: successive halving over rungs of growing budgets.

Every surviving candidate of a round trains for a short budget; the fitter half continues from
where it stopped (policy, optimiser and normalisation statistics: `sandbox.training_state`),
and only the best reach the full budget. With 4 candidates and 3 rungs (1/4, 1/2 and all of
the steps) the round trains 2x the full budget instead of 4x; with 3 candidates (the preference
check rejected one) the fittest goes from 1/4 straight to the full budget, 1.5x instead of 3x.
A continued learner keeps the schedule of the whole run, so a candidate that reaches the last
rung has trained as it would have without stopping (apart from restarted episodes).

Each rung's outcome is kept (`rung_R.json`, with the saved state beside it in `rung_R_state/`),
so a run killed mid-rung resumes without retraining a finished rung.
"""

from __future__ import annotations

from dataclasses import dataclass

from rewardsmith.job_spec import CONTINUABLE_ALGOS

ETA = 2
"""The fraction kept at each rung is 1/ETA, and each rung's budget ETA times the last one."""
MAX_RUNGS = 3
"""The shortest rung trains a quarter of the budget: shorter ones ranked CartPole's and
Pendulum's candidates little better than chance."""


@dataclass(frozen=True)
class Rung:
    """One stage: the steps a candidate has trained when it ends, of all the run's rungs."""

    index: int
    steps: int
    count: int

    @property
    def last(self) -> bool:
        """The full budget: a job on this rung trains to the end and saves no state to resume."""
        return self.index == self.count - 1


def rungs(full_steps: int, candidates: int) -> list[Rung]:
    """The rungs for `candidates` (one rung, the full budget, for a single candidate)."""
    count = 1
    while count < MAX_RUNGS and ETA ** (count - 1) < candidates:
        count += 1
    return [Rung(r, full_steps // ETA ** (count - 1 - r), count) for r in range(count)]


def survivors(entered: int) -> int:
    """How many of the candidates that finished a rung go on to the next (the fittest 1/ETA,
    rounded down: a rung that keeps 2 of 3 costs more than it saves)."""
    return max(1, entered // ETA)


def on_rollout(steps: int, rollout: int) -> int:
    """`steps` rounded down to whole rollouts (at least one): an on-policy learner stops only
    between rollouts, so a rung that ends mid-rollout would train past its budget."""
    return max(rollout, steps // rollout * rollout)


def unsupported(backend: str, algo: str) -> str | None:
    """Why a run's training cannot be continued in rungs, or None."""
    if backend != "sb3":
        return f"the {backend} backend does not continue a training yet"
    if algo not in CONTINUABLE_ALGOS:
        return f"{algo.upper()}'s replay buffer does not carry over between rungs"
    return None
