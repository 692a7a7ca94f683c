"""The Trajectory Analyzer node: turns training statistics into the reflection for the next round.

For each trained candidate: every reward component, the fitness, success rate and episode length
at the checkpoints (lists plus max/mean/min), with advice where the numbers call for it.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
from langgraph.runtime import Runtime

from rewardsmith.eureka_loop.state import Context, LoopState
from rewardsmith.prompts import render

NEAR_ZERO_SUCCESS = 0.05
FLAT_RELATIVE_RANGE = 0.05
DOMINANCE_RATIO = 10.0


def _series_line(name: str, values: list[float]) -> str:
    shown = ", ".join(f"{v:.3g}" for v in values)
    return f"{name}: [{shown}], max {max(values):.3g}, mean {float(np.mean(values)):.3g}, min {min(values):.3g}"


def advice_for(checkpoints: list[dict[str, Any]], has_success: bool) -> list[str]:
    """Eureka-style guidance derived from the numbers, so the designer acts on them."""
    advice: list[str] = []
    if has_success:
        success = [c.get("success_rate") or 0.0 for c in checkpoints]
        if max(success) < NEAR_ZERO_SUCCESS:
            advice.append("The success rate stayed near zero: the reward does not lead to the goal. Rewrite it rather than tune it.")
    components = {name: [c["components"].get(name, 0.0) for c in checkpoints] for name in checkpoints[-1].get("components", {})}
    for name, values in components.items():
        spread = max(values) - min(values)
        scale = max(abs(float(np.mean(values))), 1e-9)
        if spread < FLAT_RELATIVE_RANGE * scale or spread < 1e-9:
            advice.append(f"Component `{name}` hardly changed during training: the agent cannot move it. Rescale it, reshape it, or drop it.")
    magnitudes = {name: abs(float(np.mean(values))) for name, values in components.items()}
    if len(magnitudes) > 1:
        top = max(magnitudes, key=magnitudes.__getitem__)
        others = [m for name, m in magnitudes.items() if name != top]
        if magnitudes[top] > DOMINANCE_RATIO * max(others):
            advice.append(f"Component `{top}` is over {DOMINANCE_RATIO:.0f}x larger than the others and drowns them out: rescale it.")
    fitness = [c["fitness"] for c in checkpoints]
    if len(fitness) > 2 and fitness[-1] <= fitness[0]:
        advice.append("Fitness did not improve over training: the reward may pay for something other than the task.")
    return advice


def reflection(outcome: dict[str, Any], code: str, has_success: bool) -> tuple[str, dict[str, Any]]:
    """The reflection text for the prompt, and the same facts as data for the run record."""
    checkpoints = outcome.get("checkpoints", [])
    if not checkpoints:
        return "", {}
    lines = []
    for name in checkpoints[-1].get("components", {}):
        lines.append(_series_line(f"component `{name}` (sum per episode)", [c["components"].get(name, 0.0) for c in checkpoints]))
    lines.append(_series_line("fitness", [c["fitness"] for c in checkpoints]))
    if has_success:
        lines.append(_series_line("success rate", [c.get("success_rate") or 0.0 for c in checkpoints]))
    lines.append(_series_line("episode length", [c["episode_length"] for c in checkpoints]))
    advice = advice_for(checkpoints, has_success)
    text = render(
        "reflection", fitness=outcome["fitness"], code=code, n_checkpoints=len(checkpoints), lines=lines, advice=advice, analysis=None
    )
    return text, {"lines": lines, "advice": advice}


def analyze(state: LoopState, runtime: Runtime[Context]) -> dict[str, Any]:
    ctx = runtime.context
    for c in state.get("candidates", []):
        if c.get("status") != "trained":
            continue
        cand_dir = ctx.run.candidate_dir(c["round"], c["idx"])
        outcome = json.loads((cand_dir / "outcome.json").read_text())
        text, data = reflection(outcome, (cand_dir / "reward.py").read_text(), ctx.adapter.has_success)
        ctx.run.write_candidate_file(c["round"], c["idx"], "reflection.md", text)
        ctx.run.write_candidate_file(c["round"], c["idx"], "analysis.json", data)
    return {}
