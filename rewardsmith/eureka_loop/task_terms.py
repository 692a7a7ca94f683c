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
from collections.abc import Iterable
from dataclasses import dataclass, replace

from rewardsmith.envs.adapter import TaskAdapter
from rewardsmith.envs.schema import Field

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
        """As `Term.name`: the component this term is in the generated reward (`alive_bonus`)."""
        return TASK_TERM_NAMES[self.kind].format(field=self.field)


def derive_terms(adapter: TaskAdapter, gamma: float) -> list[Derived]:
    """The task file's terms, fitness and success first, then those from field descriptions."""
    rule = getattr(adapter, "fitness_rule", None)
    if rule is None:
        return []
    fitness_kind, fitness_field = rule
    success = getattr(adapter, "success_rule", None)
    survival = _is_survival_task(fitness_kind, success)
    terms = _first_per_kind_and_field(
        [
            *_fitness_terms(fitness_kind, fitness_field, gamma),
            *_success_terms(success, fitness_kind, fitness_field),
            *_field_terms(adapter.schema.fields, fitness_field, survival),
        ]
    )
    return _share_field_budget(terms)


def _fitness_terms(kind: str, field: str | None, gamma: float) -> list[Derived]:
    """The term that rewards, per step, what `[fitness]` scores over an episode (none for a
    kind with no per-step counterpart, or a field-based kind without its field)."""
    if kind == "episode_length":
        return [_primary("alive", "", None, "the fitness is the episode length")]
    if not field:
        return []
    if kind == "final_minus_initial":
        return [_primary("progress", field, None, f"the fitness is {field}'s gain")]
    if kind in ("final", "max"):
        return [_primary("potential", field, gamma, f"the fitness is the {kind} value of {field}")]
    if kind == "mean":
        return [_primary("level", field, None, f"the fitness is {field}'s mean")]
    return []


def _success_terms(
    success: tuple[str, float | None] | None, fitness_kind: str, fitness_field: str | None
) -> list[Derived]:
    """The term that rewards what `[success]` counts as success. A threshold on the fitness
    field is not rewarded for a gain (`final_minus_initial`): a step has no initial value."""
    if success is None:
        return []
    kind, threshold = success
    if kind == "truncated":
        return [_primary("alive", "", None, "success is lasting to the time limit")]
    if kind == "terminated":
        return [_primary("time_penalty", "", None, "success is the episode ending")]
    if kind == "fitness_at_least" and fitness_field and fitness_kind != "final_minus_initial":
        reason = f"success is {fitness_field} reaching {threshold:g}"
        return [_primary("reach", fitness_field, threshold, reason)]
    return []


def _primary(kind: str, field: str, param: float | None, reason: str) -> Derived:
    """A term for the task's goal (fitness or success), which field guidance must not outweigh."""
    return Derived(kind, field, PRIMARY_WEIGHT, param, reason)


def _is_survival_task(fitness_kind: str, success: tuple[str, float | None] | None) -> bool:
    """Whether the task is to last: only then is a described limit a failure bound and a
    velocity something to keep calm."""
    return fitness_kind == "episode_length" or (success is not None and success[0] == "truncated")


def _field_terms(
    fields: Iterable[Field], fitness_field: str | None, survival: bool
) -> list[Derived]:
    """The guidance terms read off the fields' names, descriptions and units, in schema order."""
    terms = (_field_term(f, fitness_field, survival) for f in fields)
    return [t for t in terms if t is not None]


def _field_term(field: Field, fitness_field: str | None, survival: bool) -> Derived | None:
    """The one term a field's description suggests, if any. A vector field can only be an
    offset to shrink, and the fitness field already has its primary term."""
    if field.shape:
        return _vector_field_term(field)
    if field.name == fitness_field:
        return None
    return _scalar_field_term(field, survival)


def _vector_field_term(field: Field) -> Derived | None:
    """`closer_norm` for a vector that is an offset to a target: its norm is to shrink."""
    if _DISTANCE.search(_field_text(field)) or "to_target" in field.name:
        return _guidance("closer_norm", field.name, None, f"{field.name} is an offset to a target")
    return None


def _scalar_field_term(field: Field, survival: bool) -> Derived | None:
    """A scalar's term, the first that applies: a limit to keep within (survival only), a
    distance to shrink, or a velocity to keep calm (survival only)."""
    bound = _positive_limit(field.description)
    if survival and bound is not None:
        return _guidance(
            "within_limit", field.name, bound, f"{field.name} is limited to +-{bound:g}"
        )
    if _DISTANCE.search(_field_text(field)):
        return _guidance("closer", field.name, None, f"{field.name} is a distance")
    if survival and field.units in _VELOCITY_UNITS:
        return _guidance("calm", field.name, None, f"{field.name} is a velocity in a survival task")
    return None


def _positive_limit(description: str) -> float | None:
    """The first `+-L` in a description, if L > 0 (a zero limit bounds nothing to normalise by)."""
    limit = _LIMIT.search(description)
    if limit is None:
        return None
    bound = float(limit.group(1))
    return bound if bound > 0 else None


def _field_text(field: Field) -> str:
    """Name and description together: either may say that a field is a distance."""
    return f"{field.name} {field.description}"


def _guidance(kind: str, field: str, param: float | None, reason: str) -> Derived:
    """A term from a field description, at the field weight (`_share_field_budget` may lower it)."""
    return Derived(kind, field, FIELD_WEIGHT, param, reason)


def _first_per_kind_and_field(terms: list[Derived]) -> list[Derived]:
    """The terms without repeats of a (kind, field), keeping the first: fitness and success can
    both ask for the alive bonus, and the fitness's reason is the one to show."""
    kept: list[Derived] = []
    for term in terms:
        if all((t.kind, t.field) != (term.kind, term.field) for t in kept):
            kept.append(term)
    return kept


def _share_field_budget(terms: list[Derived]) -> list[Derived]:
    """The field terms reweighted to share `FIELD_BUDGET`, so that however many fields a task
    describes, their guidance never outweighs the goal."""
    from_fields = [t for t in terms if t.kind in _FIELD_KINDS]
    weight = min(FIELD_WEIGHT, FIELD_BUDGET / max(len(from_fields), 1))
    return [replace(t, weight=weight) if t in from_fields else t for t in terms]
