"""The offline designer: AutoRL-style evolution of reward terms and weights, with no LLM.

A genome re-weights the components of the task's human reward and adds generic, mostly
potential-based shaping terms over the state fields. Round 0 holds the unmodified human reward
and, one per candidate, the human reward with one of its components down-weighted tenfold: a
term that slows learning (Pendulum's velocity penalty slows the swing-up) shows at once. Later
rounds mutate the best genome so far. Replies are code, like an LLM's, so the rest of the loop
(critic, training, replay) treats both designers the same way.
"""

from __future__ import annotations

import ast
import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from rewardsmith.envs.adapter import TaskAdapter
from rewardsmith.eureka_loop.designer import Message, Proposal
from rewardsmith.eureka_loop.state import Context, LoopState
from rewardsmith.prompts import render
from rewardsmith.sandbox.trajectories import load_episodes

SHAPING_KINDS = ("toward_zero", "increase", "decrease", "level_penalty")
GENOME_FILE = "genome.json"
ABLATION_WEIGHT = 0.1


@dataclass
class Term:
    kind: str
    field: str
    weight: float

    @property
    def name(self) -> str:
        return f"shape_{self.kind}_{self.field}"


@dataclass
class Genome:
    human_weights: dict[str, float] = field(default_factory=dict)
    shaping: list[Term] = field(default_factory=list)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2)

    @classmethod
    def from_json(cls, text: str) -> Genome:
        data = json.loads(text)
        return cls(dict(data["human_weights"]), [Term(**t) for t in data["shaping"]])


def term_expression(term: Term, scale: float) -> str:
    """The numpy expression of a shaping term, normalised to unit per-step spread."""
    s, n = f"state.{term.field}", f"next_state.{term.field}"
    body = {
        "toward_zero": f"(np.abs({s}) - np.abs({n}))",
        "increase": f"({n} - {s})",
        "decrease": f"({s} - {n})",
        "level_penalty": f"-({n} ** 2)",
    }[term.kind]
    return f"{term.weight:.6g} * {scale:.6g} * {body}"


def term_scales(adapter: TaskAdapter, states_path: Path) -> dict[tuple[str, str], float]:
    """1 / std of each candidate term over recorded random-policy transitions (plain numpy)."""
    scales: dict[tuple[str, str], float] = {}
    episodes = [episode for episode, _, _ in load_episodes(states_path)]
    for f in adapter.schema.fields:
        if f.shape:
            continue
        before = np.concatenate([e.states[f.name][:-1] for e in episodes])
        after = np.concatenate([e.states[f.name][1:] for e in episodes])
        values = {
            "toward_zero": np.abs(before) - np.abs(after),
            "increase": after - before,
            "decrease": before - after,
            "level_penalty": -(after**2),
        }
        for kind, v in values.items():
            std = float(np.std(v))
            if std > 1e-8 and math.isfinite(std):
                scales[(kind, f.name)] = 1.0 / std
    return scales


def _human_helpers(source: str) -> str:
    """The human reward's definitions, minus its docstring and imports, as `_human_reward`."""
    tree = ast.parse(source)
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
        for node in ast.parse(source).body
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


def render_code(
    genome: Genome, human_source: str | None, scales: dict[tuple[str, str], float]
) -> str:
    """Reward source for a genome; the human reward is embedded as a helper function."""
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
        lines.append(
            f'    components["{term.name}"] = {term_expression(term, scales[(term.kind, term.field)])}'
        )
        lines.append(f'    total = total + components["{term.name}"]')
    lines.append("    return total, components")
    return "\n".join(lines) + "\n"


def mutate(
    parent: Genome, rng: np.random.Generator, options: list[tuple[str, str]], components: list[str]
) -> tuple[Genome, list[str]]:
    """One child that differs from its parent: perturbed weights, an added or removed shaping
    term, re-weighted human parts."""
    while True:
        child, notes = _mutation(parent, rng, options, components)
        if child != parent:
            return child, notes


def _mutation(
    parent: Genome, rng: np.random.Generator, options: list[tuple[str, str]], components: list[str]
) -> tuple[Genome, list[str]]:
    child = Genome(
        dict(parent.human_weights), [Term(t.kind, t.field, t.weight) for t in parent.shaping]
    )
    notes: list[str] = []
    while not notes:
        if child.shaping and rng.random() < 0.5:
            for term in child.shaping:
                term.weight = float(term.weight * math.exp(rng.normal(0, 0.5)))
            notes.append("perturbed shaping weights")
        present = {(t.kind, t.field) for t in child.shaping}
        free = [o for o in options if o not in present]
        if free and (rng.random() < 0.5 or not child.shaping):
            kind, name = free[int(rng.integers(len(free)))]
            child.shaping.append(Term(kind, name, float(10 ** rng.uniform(-1.5, 0.0))))
            notes.append(f"added {kind} on {name}")
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


class OfflineDesigner:
    """Evolutionary search seeded from the human reward; announced as what it is, never an LLM."""

    name = "offline designer (evolutionary search over reward terms, no LLM)"
    is_llm = False

    def propose(
        self, ctx: Context, state: LoopState, messages: list[Message], keys: list[str]
    ) -> list[Proposal]:
        adapter = ctx.adapter
        human = adapter.reward_source("human")
        scales = term_scales(adapter, ctx.states_path)
        options = sorted(scales)
        round_, attempt = state.get("round", 0), state.get("attempt", 0)
        best = state.get("best")
        parent, components = Genome(), []
        if best is not None:
            parent_dir = ctx.run.candidate_dir(best["round"], best["idx"])
            parent = Genome.from_json((parent_dir / GENOME_FILE).read_text())
            outcome = json.loads((parent_dir / "outcome.json").read_text())
            components = [c for c in outcome.get("components", {}) if not c.startswith("shape_")]
        else:
            components = human_components(human)
        rng = np.random.default_rng([ctx.config.seed, round_, attempt])
        planned = round_zero(components, len(keys)) if best is None and attempt == 0 else []
        proposals = []
        for i, key in enumerate(keys):
            cached = ctx.run.load_reply(key)
            if cached is not None:
                proposals.append(Proposal(cached["reply"], cached))
                continue
            if i < len(planned):
                genome, notes = planned[i]
            else:
                genome, notes = mutate(parent, rng, options, components)
            code = render_code(genome, human, scales)
            reply = render("offline_reply", notes=notes, genome=genome.to_json(), code=code)
            record = {"reply": reply, "genome": genome.to_json(), "designer": self.name}
            ctx.run.save_reply(key, record)
            proposals.append(Proposal(reply, record))
        return proposals
