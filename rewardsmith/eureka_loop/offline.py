"""The offline designer: AutoRL-style evolution of reward terms and weights, with no LLM.

A genome re-weights the components of the task's human reward and adds generic, mostly
potential-based shaping terms over the state fields, and terms a task file's own words imply
(`task_terms.py`). Round 0 holds the unmodified human reward and, one per candidate, the human
reward with one of its components down-weighted tenfold: a term that slows learning (Pendulum's
velocity penalty slows the swing-up) shows at once. A task without a human reward starts instead
from the environment's own reward (`baseline.py`) and the task file's terms. Later rounds mutate
the best genome so far. Replies are code, like an LLM's, so the rest of the loop (critic,
training, replay) treats both designers the same way.
"""

from __future__ import annotations

import ast
import json
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rewardsmith.envs.adapter import TaskAdapter
from rewardsmith.eureka_loop.baseline import ENV_REWARD_SOURCE
from rewardsmith.eureka_loop.designer import Message, Proposal
from rewardsmith.eureka_loop.feedback_terms import named_adjustments
from rewardsmith.eureka_loop.state import CandidateKey, CandidateSummary, Context, LoopState
from rewardsmith.eureka_loop.task_terms import (
    TASK_TERM_NAMES,
    UNSCALED_KINDS,
    Derived,
    derive_terms,
)
from rewardsmith.prompts import render
from rewardsmith.reward.syntax import parse
from rewardsmith.rl.trajectories import load_episodes
from rewardsmith.runs import layout
from rewardsmith.runs.judgements import feedback_for_design
from rewardsmith.runs.schema import embedded_record

SHAPING_KINDS = ("toward_zero", "increase", "decrease", "level_penalty")
ABLATION_WEIGHT = 0.1


@dataclass
class Term:
    """One term added to a genome's reward: `kind` (SHAPING_KINDS or a task term's) over the state
    field `field` ("" for a constant such as `alive`), times `weight`, normalised to unit
    per-step spread where it has one (`term_expression`)."""

    kind: str
    field: str
    weight: float
    param: float | None = None  # a task term's limit, threshold or discount

    @property
    def name(self) -> str:
        """Task terms by what they reward (`alive_bonus`); generic ones by kind and field."""
        if self.kind in TASK_TERM_NAMES:
            return TASK_TERM_NAMES[self.kind].format(field=self.field)
        return f"shape_{self.kind}_{self.field}"


@dataclass
class Genome:
    """One offline candidate: weights on the human reward's components (one left out is 1.0),
    shaping terms added to it, or the environment's own reward in place of both."""

    human_weights: dict[str, float] = field(default_factory=dict)
    shaping: list[Term] = field(default_factory=list)
    env_reward: bool = False  # the environment's own reward, unchanged (no human reward file)

    def to_json(self) -> str:
        """The genome as the offline designer's reply shows it."""
        return json.dumps(asdict(self), indent=2)

    def to_dict(self) -> dict[str, Any]:
        """The record kept as the candidate's genome.json; `from_record` reads it back."""
        return asdict(self)

    @classmethod
    def from_record(cls, value: str | Mapping[str, Any]) -> Genome:
        """A genome from its record (genome.json), or from the JSON text older replies hold."""
        data = embedded_record(value)
        return cls(
            dict(data["human_weights"]),
            [Term(**t) for t in data["shaping"]],
            bool(data.get("env_reward", False)),
        )


def term_expression(term: Term, scale: float) -> str:
    """The numpy expression of a term, normalised to unit per-step spread where it has one."""
    s, n, p = f"state.{term.field}", f"next_state.{term.field}", f"{term.param or 0.0:.6g}"
    body = {
        "toward_zero": f"(np.abs({s}) - np.abs({n}))",
        "increase": f"({n} - {s})",
        "decrease": f"({s} - {n})",
        "level_penalty": f"-({n} ** 2)",
        "alive": "np.ones(len(action))",
        "time_penalty": "-np.ones(len(action))",
        "progress": f"({n} - {s})",
        "potential": f"({p} * {n} - {s})",
        "level": f"{n}",
        "reach": f"({n} >= {p}).astype(np.float64)",
        "within_limit": f"-np.minimum(({n} / {p}) ** 2, 1.0)",
        "closer": f"(np.abs({s}) - np.abs({n}))",
        "closer_norm": f"(np.linalg.norm({s}, axis=1) - np.linalg.norm({n}, axis=1))",
        "calm": f"-np.tanh({scale:.6g} * {n} ** 2)",
    }[term.kind]
    if term.kind == "calm":  # bounded: a fast but surviving state must not outweigh survival
        return f"{term.weight:.6g} * {body}"
    return f"{term.weight:.6g} * {scale:.6g} * {body}"


def _field_values(before: np.ndarray, after: np.ndarray) -> dict[str, np.ndarray]:
    """Each scaled term kind's per-step values on one scalar field."""
    return {
        "toward_zero": np.abs(before) - np.abs(after),
        "increase": after - before,
        "decrease": before - after,
        "level_penalty": -(after**2),
        "progress": after - before,
        "potential": after - before,  # gamma * F' - F is near F' - F for gamma near 1
        "level": after,
        "closer": np.abs(before) - np.abs(after),
        "calm": -(after**2),
    }


def term_scales(adapter: TaskAdapter, states_path: Path) -> dict[tuple[str, str], float]:
    """1 / std of each candidate term over recorded random-policy transitions (plain numpy)."""
    scales: dict[tuple[str, str], float] = {}
    episodes = [episode for episode, _, _ in load_episodes(states_path)]
    for f in adapter.schema.fields:
        before = np.concatenate([e.states[f.name][:-1] for e in episodes])
        after = np.concatenate([e.states[f.name][1:] for e in episodes])
        if f.shape:  # a vector field: only its size's decrease
            norms = np.linalg.norm(before, axis=1) - np.linalg.norm(after, axis=1)
            values = {"closer_norm": norms}
        else:
            values = _field_values(before, after)
        for kind, v in values.items():
            std = float(np.std(v))
            if std > 1e-8 and math.isfinite(std):
                scales[(kind, f.name)] = 1.0 / std
    return scales


def _human_helpers(source: str) -> str:
    """The human reward's definitions, minus its docstring and imports, as `_human_reward`."""
    tree = parse(source)
    kept = [
        node
        for node in tree.body
        if not isinstance(node, ast.Import | ast.ImportFrom)
        and not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant))
    ]
    parts = [ast.get_source_segment(source, node) or "" for node in kept]
    return "\n\n\n".join(parts).replace("def compute_reward(", "def _human_reward(")


def human_components(source: str | None) -> list[str]:
    """The component names the human reward returns, read from its source without running it.

    Built-in rewards end with `return total, {"name": value, ...}` or return a name bound to
    such a dict; for any other shape the result is empty and round 0 mutates at random.
    """
    if source is None:
        return []
    functions = [
        node
        for node in parse(source).body
        if isinstance(node, ast.FunctionDef) and node.name == "compute_reward"
    ]
    dicts: dict[str, ast.Dict] = {}
    returned: ast.expr | None = None
    for node in ast.walk(functions[0]) if functions else ():
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    dicts[target.id] = node.value
        if (
            isinstance(node, ast.Return)
            and isinstance(node.value, ast.Tuple)
            and len(node.value.elts) == 2
        ):
            returned = node.value.elts[1]
    if isinstance(returned, ast.Name):
        returned = dicts.get(returned.id)
    if not isinstance(returned, ast.Dict):
        return []
    names = [
        k.value for k in returned.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)
    ]
    return names if len(names) == len(returned.keys) else []


def round_zero(components: list[str], slots: int) -> list[tuple[Genome, list[str]]]:
    """The human reward, then one candidate per component with it down-weighted (up to `slots`)."""
    plan = [(Genome(), ["the task's human reward, unchanged"])]
    if len(components) > 1:  # with one component, down-weighting it only rescales the reward
        for name in components[: slots - 1]:
            plan.append(
                (
                    Genome({name: ABLATION_WEIGHT}),
                    [f"human reward with component {name} down-weighted to {ABLATION_WEIGHT}x"],
                )
            )
    return plan[:slots]


def baseline_round_zero(derived: list[Derived], slots: int) -> list[tuple[Genome, list[str]]]:
    """Without a human reward: the environment's own reward, then the task file's terms."""
    plan = [
        (
            Genome(env_reward=True),
            ["the environment's own reward, unchanged (the task has no human reward file)"],
        )
    ]
    if derived:
        reasons = "; ".join(f"{d.name} ({d.reason})" for d in derived)
        plan.append((Genome(shaping=task_genome_terms(derived)), [f"task-file terms: {reasons}"]))
    return plan[:slots]


def task_genome_terms(derived: list[Derived]) -> list[Term]:
    """The task file's terms as genome terms, with the weights `task_terms` gave them."""
    return [Term(d.kind, d.field, d.weight, d.param) for d in derived]


def render_code(
    genome: Genome, human_source: str | None, scales: dict[tuple[str, str], float]
) -> str:
    """Reward source for a genome; the human reward is embedded as a helper function.

    The unchanged human reward is its own source, verbatim: what it is can be read from the code
    (the final evaluation then trains it once for both its arms, `evaluation.same_reward`)."""
    if genome.env_reward:
        return ENV_REWARD_SOURCE
    if human_source is not None and not genome.human_weights and not genome.shaping:
        return human_source
    lines = ["import numpy as np", "", ""]
    if human_source is not None:
        lines += [_human_helpers(human_source), "", ""]
    lines.append(f"_HUMAN_WEIGHTS = {json.dumps(genome.human_weights, sort_keys=True)}")
    lines += ["", "", "def compute_reward(state, action, next_state):"]
    if human_source is not None:
        lines += [
            "    total, human = _human_reward(state, action, next_state)",
            "    components = {name: _HUMAN_WEIGHTS.get(name, 1.0) * value for name, value in human.items()}",
            "    for name, value in human.items():",
            "        total = total + (_HUMAN_WEIGHTS.get(name, 1.0) - 1.0) * value",
        ]
    else:
        lines += ["    total = np.zeros(len(action))", "    components = {}"]
    for term in genome.shaping:
        scale = 1.0 if term.kind in UNSCALED_KINDS else scales[(term.kind, term.field)]
        lines.append(f'    components["{term.name}"] = {term_expression(term, scale)}')
        lines.append(f'    total = total + components["{term.name}"]')
    lines.append("    return total, components")
    return "\n".join(lines) + "\n"


def mutate(
    parent: Genome, rng: np.random.Generator, options: list[Term], components: list[str]
) -> tuple[Genome, list[str]]:
    """One child that differs from its parent: perturbed weights, an added or removed shaping
    term (`options` are the terms it may add; their weights are ignored), re-weighted human
    parts."""
    if not options and not parent.shaping and not components:
        raise ValueError(
            "the offline designer has nothing to vary: the task has no human reward, no scalar "
            "state field that changes on random rollouts, and no fitness or success rule that "
            "implies a term; add such fields or a human_reward file, or design with --model"
        )
    while True:
        child, notes = _mutation(parent, rng, options, components)
        if child != parent:
            return child, notes


def _mutation(
    parent: Genome, rng: np.random.Generator, options: list[Term], components: list[str]
) -> tuple[Genome, list[str]]:
    child = Genome(
        dict(parent.human_weights),
        [Term(t.kind, t.field, t.weight, t.param) for t in parent.shaping],
    )
    notes: list[str] = []
    while not notes:
        if child.shaping and rng.random() < 0.5:
            for term in child.shaping:
                term.weight = float(term.weight * math.exp(rng.normal(0, 0.5)))
            notes.append("perturbed shaping weights")
        present = {(t.kind, t.field) for t in child.shaping}
        free = [o for o in options if (o.kind, o.field) not in present]
        if free and (rng.random() < 0.5 or not child.shaping):
            add = free[int(rng.integers(len(free)))]
            weight = float(10 ** rng.uniform(-1.5, 0.0))
            child.shaping.append(Term(add.kind, add.field, weight, add.param))
            generic = add.kind in SHAPING_KINDS
            notes.append(f"added {add.kind} on {add.field}" if generic else f"added {add.name}")
        if child.shaping and rng.random() < 0.15:
            removed = child.shaping.pop(int(rng.integers(len(child.shaping))))
            notes.append(f"removed {removed.name}")
        if components and rng.random() < 0.3:
            name = components[int(rng.integers(len(components)))]
            child.human_weights[name] = float(
                child.human_weights.get(name, 1.0) * math.exp(rng.normal(0, 0.7))
            )
            notes.append(f"re-weighted human component {name}")
    return child, notes


@dataclass
class _Search:
    """What one round's proposals are drawn from: the genome to mutate, the mutations on offer,
    and the planned first round."""

    human: str | None
    scales: dict[tuple[str, str], float]
    options: list[Term]
    parent: Genome
    components: list[str]
    planned: list[tuple[Genome, list[str]]]
    heeded: list[str]  # what the person's feedback changed in the parent


def heed_feedback(parent: Genome, components: list[str], text: str | None) -> list[str]:
    """Turn the parent's terms and human components that the feedback names up or down
    (`feedback_terms`), in place; returns a note for each change."""
    names = [t.name for t in parent.shaping] + components
    notes = []
    for name, factor in named_adjustments(text, names).items():
        for term in parent.shaping:
            if term.name == name:
                term.weight = float(term.weight * factor)
        if name in components:
            parent.human_weights[name] = float(parent.human_weights.get(name, 1.0) * factor)
        way = "down" if factor < 1 else "up"
        notes.append(f"turned {name} {way} (x{factor:g}): the person's feedback names it")
    return notes


def _search(ctx: Context, state: LoopState, samples: int) -> _Search:
    """The round's search space: from the best candidate so far, else from the human reward (or,
    without one, the task file's terms)."""
    from rewardsmith.eureka_loop.preference import learner_gamma

    adapter = ctx.adapter
    human = adapter.reward_source("human")
    scales = term_scales(adapter, ctx.states_path)
    derived = [
        d
        for d in derive_terms(adapter, learner_gamma(ctx))
        if d.kind in UNSCALED_KINDS or (d.kind, d.field) in scales
    ]
    options = [Term(k, f, 1.0) for k, f in sorted(scales) if k in SHAPING_KINDS]
    options += task_genome_terms(derived)
    # Without a human reward, evolution starts from the task file's terms.
    start = Genome() if human is not None else Genome(shaping=task_genome_terms(derived))
    best = state.get("best")
    if best is not None:
        parent, components = _parent(ctx, best, start, human)
    else:
        parent, components = start, human_components(human)
    round_ = state.get("round", 0)
    feedback = "\n".join(
        t for t in (ctx.config.feedback, feedback_for_design(ctx.run.path, round_)) if t
    )
    heeded = heed_feedback(parent, components, feedback)
    planned: list[tuple[Genome, list[str]]] = []
    if best is None and state.get("attempt", 0) == 0:
        planned = (
            round_zero(components, samples)
            if human is not None
            else baseline_round_zero(derived, samples)
        )
    return _Search(human, scales, options, parent, components, planned, heeded)


def _parent(
    ctx: Context, best: CandidateSummary, start: Genome, human: str | None
) -> tuple[Genome, list[str]]:
    """The best candidate's genome, and the human components it does not already reshape."""
    parent_files = ctx.run.candidate(CandidateKey.of(best))
    recorded = parent_files.record(layout.GENOME)
    if recorded is None:
        raise FileNotFoundError(f"{parent_files.path} has no genome to evolve from")
    parent = Genome.from_record(recorded)
    if parent.env_reward:  # the baseline cannot be mutated: code cannot read env rewards
        parent = start
    if human is None:
        return parent, []
    terms = {t.name for t in parent.shaping}
    outcome = parent_files.outcome() or {}
    components = [
        c for c in outcome.get("components", {}) if not c.startswith("shape_") and c not in terms
    ]
    return parent, components


class OfflineDesigner:
    """Evolutionary search seeded from the human reward; announced as what it is, never an LLM."""

    name = "offline designer (evolutionary search over reward terms, no LLM)"

    def propose(
        self, ctx: Context, state: LoopState, messages: list[Message], keys: list[str]
    ) -> list[Proposal]:
        """Deterministic in the seed, round and attempt; a reply already saved under a key is
        reused, so a resumed round proposes the same candidates."""
        search = _search(ctx, state, len(keys))
        rng = np.random.default_rng(
            [ctx.config.seed, state.get("round", 0), state.get("attempt", 0)]
        )
        proposals = []
        for i, key in enumerate(keys):
            cached = ctx.run.load_reply(key)
            if cached is not None:
                proposals.append(Proposal(cached["reply"], cached))
                continue
            if i < len(search.planned):
                genome, notes = search.planned[i]
            else:
                genome, notes = mutate(search.parent, rng, search.options, search.components)
                notes = search.heeded + notes
            code = render_code(genome, search.human, search.scales)
            reply = render("offline_reply", notes=notes, genome=genome.to_json(), code=code)
            record = {"reply": reply, "genome": genome.to_dict(), "designer": self.name}
            ctx.run.save_reply(key, record)
            proposals.append(Proposal(reply, record))
        return proposals
