"""Reward terms the offline designer reads off a task file: what the task says it wants.

Without a human reward there is nothing to re-weight, and generic shaping over every field is
noise to the preference check (agreement near chance). A task file says more: how an episode is
scored (`[fitness]`), what success is (`[success]`), and what each field means (descriptions and
units). Each of those maps to a term, named for what it rewards:

| the task file says | term |
|---|---|
| fitness `episode_length`, or success `truncated` | `alive_bonus`: +1 per step |
| fitness `final_minus_initial` of F | `progress_F`: F's increase per step |
| fitness `final` or `max` of F | `potential_F`: `gamma * F' - F`, a potential on F |
| fitness `mean` of F | `high_F`: F after each step |
| success `fitness_at_least` T on F | `reach_F`: +1 on steps with F >= T |
| success `terminated` | `time_penalty`: -1 per step, so ending (the goal) sooner pays |
| a field's description gives a limit (`+-2.4`) in a survival task | `keep_F_within_limit`: `-min((F / limit)^2, 1)` |
| a field is a distance or an offset to a target | `closer_F`: the decrease of its size |
| a velocity (`m/s`, `rad/s`) in a survival task | `calm_F`: `-tanh(F^2 / spread)` |

Field terms share a weight of at most `FIELD_BUDGET` per step, and the bounded ones stay within
it, so in a survival task a step alive always pays more than its penalties cost.

Only a task file (an adapter with `fitness_rule`) yields terms; built-in tasks evolve from their
human rewards as before.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from rewardsmith.envs.adapter import TaskAdapter

# kind -> the term's component name; `{field}` is the state field it reads.
TASK_TERM_NAMES = {
    "alive": "alive_bonus",
    "time_penalty": "time_penalty",
    "progress": "progress_{field}",
    "potential": "potential_{field}",
    "level": "high_{field}",
    "reach": "reach_{field}",
    "within_limit": "keep_{field}_within_limit",
    "closer": "closer_{field}",
    "closer_norm": "closer_{field}",
    "calm": "calm_{field}",
}
# Kinds whose values are already on a sensible scale (constants, indicators, limit-normalised).
UNSCALED_KINDS = frozenset({"alive", "time_penalty", "reach", "within_limit"})
PRIMARY_WEIGHT = 1.0  # the fitness and success terms
FIELD_WEIGHT = 0.2  # terms from field descriptions: guidance that must not outweigh the goal
FIELD_BUDGET = 0.5  # ... and together at most this much
_LIMIT = re.compile(r"(?:\+-|\+/-|±)\s*(\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)")
_DISTANCE = re.compile(r"\bdistance\b|\bto (?:the )?(?:target|goal)\b|\boffset\b", re.IGNORECASE)
_VELOCITY_UNITS = ("m/s", "rad/s")
_FIELD_KINDS = frozenset({"within_limit", "closer", "closer_norm", "calm"})


@dataclass(frozen=True)
class Derived:
    """One term read off the task file, with why it was chosen (shown in the reply)."""

    kind: str
    field: str
    weight: float
    param: float | None
    reason: str

    @property
    def name(self) -> str:
        return TASK_TERM_NAMES[self.kind].format(field=self.field)


def derive_terms(adapter: TaskAdapter, gamma: float) -> list[Derived]:
    """The task file's terms, fitness and success first, then those from field descriptions."""
    rule = getattr(adapter, "fitness_rule", None)
    if rule is None:
        return []
    fitness_kind, fitness_field = rule
    success = getattr(adapter, "success_rule", None)
    terms: list[Derived] = []

    def add(kind: str, field: str, weight: float, param: float | None, reason: str) -> None:
        if all((t.kind, t.field) != (kind, field) for t in terms):
            terms.append(Derived(kind, field, weight, param, reason))

    if fitness_kind == "episode_length":
        add("alive", "", PRIMARY_WEIGHT, None, "the fitness is the episode length")
    elif fitness_kind == "final_minus_initial" and fitness_field:
        add(
            "progress",
            fitness_field,
            PRIMARY_WEIGHT,
            None,
            f"the fitness is {fitness_field}'s gain",
        )
    elif fitness_kind in ("final", "max") and fitness_field:
        add(
            "potential",
            fitness_field,
            PRIMARY_WEIGHT,
            gamma,
            f"the fitness is the {fitness_kind} value of {fitness_field}",
        )
    elif fitness_kind == "mean" and fitness_field:
        add("level", fitness_field, PRIMARY_WEIGHT, None, f"the fitness is {fitness_field}'s mean")
    if success is not None:
        kind, threshold = success
        if kind == "truncated":
            add("alive", "", PRIMARY_WEIGHT, None, "success is lasting to the time limit")
        elif kind == "terminated":
            add("time_penalty", "", PRIMARY_WEIGHT, None, "success is the episode ending")
        elif kind == "fitness_at_least" and fitness_field and fitness_kind != "final_minus_initial":
            add(
                "reach",
                fitness_field,
                PRIMARY_WEIGHT,
                threshold,
                f"success is {fitness_field} reaching {threshold:g}",
            )
    survival = fitness_kind == "episode_length" or (
        success is not None and success[0] == "truncated"
    )
    for f in adapter.schema.fields:
        text = f"{f.name} {f.description}"
        if f.shape:
            if _DISTANCE.search(text) or "to_target" in f.name:
                add("closer_norm", f.name, FIELD_WEIGHT, None, f"{f.name} is an offset to a target")
            continue
        if f.name == fitness_field:
            continue
        limit = _LIMIT.search(f.description)
        if survival and limit and float(limit.group(1)) > 0:  # elsewhere a limit is a range
            bound = float(limit.group(1))
            add("within_limit", f.name, FIELD_WEIGHT, bound, f"{f.name} is limited to +-{bound:g}")
        elif _DISTANCE.search(text):
            add("closer", f.name, FIELD_WEIGHT, None, f"{f.name} is a distance")
        elif survival and f.units in _VELOCITY_UNITS:
            add("calm", f.name, FIELD_WEIGHT, None, f"{f.name} is a velocity in a survival task")
    from_fields = [t for t in terms if t.kind in _FIELD_KINDS]
    weight = min(FIELD_WEIGHT, FIELD_BUDGET / max(len(from_fields), 1))
    return [replace(t, weight=weight) if t in from_fields else t for t in terms]
