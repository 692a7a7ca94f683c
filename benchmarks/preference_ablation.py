"""Preference-check ablation: the same scripted rounds and seeds with the check on and off.

A scripted OpenAI-compatible server (tests/llm_server.py, started here on 127.0.0.1) answers the
designer with a fixed list of CartPole rewards: good ones (the human `+1 per step`, upright and
shaped variants) and bad ones (a sign flip, unrelated terms, a penalty-only reward, proxies that
pay for motion). Both arms get the same replies in the same order and the same seeds. Reported:

- training compute: environment steps trained in each arm, and the fraction the check saved;
- best fitness of each arm (selection is by fitness, so a wrongly rejected good reward shows here);
- calibration: every reply's preference score on the seed bank and on the off arm's final bank
  (grown with all ten trained policies), next to the fitness it reached when trained (off arm);
- the score of each task's shipped (environment) reward on its seed bank, which sets the bar
  where fitness orders episodes unlike any sensible reward (rewardsmith/eureka_loop/preference_scoring.py).

Each round has one candidate, so every reply trains with the same seed in both arms. Run (about
six minutes on 2 shared cores at the default 10,000 steps per candidate):

    .venv/bin/python benchmarks/preference_ablation.py [--steps 10000]

Writes benchmarks/results/preference_ablation.json and .md (see docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rewardsmith.choices import SandboxChoice  # noqa: E402
from rewardsmith.envs import load_task  # noqa: E402
from rewardsmith.eureka_loop.bank import TrajectoryBank, seed_bank  # noqa: E402
from rewardsmith.eureka_loop.extract import extract_code  # noqa: E402
from rewardsmith.eureka_loop.preference import BankView  # noqa: E402
from rewardsmith.eureka_loop.preference_scoring import Scores, assess  # noqa: E402
from rewardsmith.eureka_loop.runner import start_run  # noqa: E402
from rewardsmith.eureka_loop.state import LoopConfig  # noqa: E402
from rewardsmith.jobs.score import score_bank  # noqa: E402
from rewardsmith.jobs.training import make_job  # noqa: E402
from rewardsmith.runs.store import RunStore  # noqa: E402
from rewardsmith.sandbox.executor import ProcessSandbox  # noqa: E402
from tests.llm_server import ScriptedLLMServer  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
TASK = "cartpole"
REFERENCE_TASKS = (
    "cartpole",
    "pendulum",
    "acrobot",
    "mountaincar-continuous",
    "lunarlander",
    "hopper",
)


def _reward(body: str) -> str:
    return (
        "```python\nimport numpy as np\n\n\ndef compute_reward(state, action, next_state):\n"
        + body
        + "```\n"
    )


# name -> (what it is, reply). Good: pays for the goal. Bad: pays against it, or for something else.
REPLIES: dict[str, tuple[str, str]] = {
    "upright": (
        "good",
        _reward(
            "    upright = 1.0 - np.abs(next_state.pole_angle) / 0.21\n"
            "    centred = -0.1 * np.abs(next_state.cart_position)\n"
            "    return upright + centred, {'upright': upright, 'centred': centred}\n"
        ),
    ),
    "alive_plus_one": (
        "good",
        _reward(
            "    alive = np.ones_like(next_state.pole_angle)\n    return alive, {'alive': alive}\n"
        ),
    ),
    "upright_squared": (
        "good",
        _reward(
            "    upright = 1.0 - (next_state.pole_angle / 0.21) ** 2\n"
            "    still = -0.01 * next_state.pole_angular_velocity ** 2\n"
            "    return upright + still, {'upright': upright, 'still': still}\n"
        ),
    ),
    "alive_shaped": (
        "good",
        _reward(
            "    alive = np.ones_like(next_state.pole_angle)\n"
            "    angle = -0.5 * np.abs(next_state.pole_angle)\n"
            "    track = -0.05 * np.abs(next_state.cart_position)\n"
            "    return alive + angle + track, {'alive': alive, 'angle': angle, 'track': track}\n"
        ),
    ),
    "flipped_sign": (
        "bad",
        _reward(
            "    upright = -(1.0 - np.abs(next_state.pole_angle) / 0.21)\n"
            "    centred = -0.1 * np.abs(next_state.cart_position)\n"
            "    return upright + centred, {'upright': upright, 'centred': centred}\n"
        ),
    ),
    "unrelated_push_right": (
        "bad",
        _reward(
            "    push = (action == 1).astype(np.float64) - 0.5\n"
            "    return push, {'push_right': push}\n"
        ),
    ),
    "penalty_only": (
        "bad",
        _reward(
            "    angle = -np.abs(next_state.pole_angle)\n"
            "    track = -0.1 * np.abs(next_state.cart_position)\n"
            "    return angle + track, {'angle': angle, 'track': track}\n"
        ),
    ),
    "proxy_pole_spin": (
        "bad",
        _reward(
            "    spin = np.abs(next_state.pole_angular_velocity)\n    return spin, {'spin': spin}\n"
        ),
    ),
    "proxy_cart_speed": (
        "bad",
        _reward(
            "    speed = np.abs(next_state.cart_velocity)\n    return speed, {'speed': speed}\n"
        ),
    ),
    "proxy_pole_tilt": (
        "hackable",
        _reward("    tilt = np.abs(next_state.pole_angle)\n    return tilt, {'tilt': tilt}\n"),
    ),
}
# One candidate per round, so each reply gets the same slot, hence the same training seed, in both
# arms (the designer sends a round's K requests at once; which reply lands in which slot would
# otherwise be a race).
ORDER = [
    "upright",
    "flipped_sign",
    "unrelated_push_right",
    "proxy_pole_spin",
    "alive_plus_one",
    "upright_squared",
    "penalty_only",
    "alive_shaped",
    "proxy_cart_speed",
    "proxy_pole_tilt",
]


def _name_of(code: str) -> str:
    for name, (_, reply) in REPLIES.items():
        if extract_code(reply).strip() == code.strip():
            return name
    return "?"


def run_arm(check: bool, steps: int, runs_dir: Path) -> dict[str, Any]:
    """One full loop with the scripted replies; per-reply outcomes keyed by reply name."""
    script = [REPLIES[name][1] for name in ORDER]
    server = ScriptedLLMServer(script).start()
    began = time.monotonic()
    try:
        config = LoopConfig(
            task_id=TASK,
            model="openai/scripted",
            api_base=server.base_url,
            rounds=len(ORDER),
            samples=1,
            steps=steps,
            parallel=1,
            seed=0,
            evaluate=False,
            round_retries=0,
            sandbox=SandboxChoice.PROCESS,
            preference_check=check,
        )
        result = start_run(config, runs_dir, command=["benchmarks/preference_ablation.py"])
    finally:
        server.stop()
    wall_s = time.monotonic() - began
    run_dir = Path(result["run_dir"])
    replies: dict[str, dict[str, Any]] = {}
    trained_steps, train_wall_s = 0, 0.0
    for c in RunStore(runs_dir).open_run(run_dir).candidates():
        cand_dir = run_dir / f"round_{c['round']:02d}" / f"cand_{c['idx']:02d}"
        name = _name_of((cand_dir / "reward.py").read_text())
        entry: dict[str, Any] = {
            "status": c["status"],
            "category": c["category"],
            "fitness": c["fitness"],
        }
        if (cand_dir / "outcome.json").exists():
            outcome = json.loads((cand_dir / "outcome.json").read_text())
            entry["steps"] = outcome["steps"]
            trained_steps += int(outcome["steps"])
            train_wall_s += float(outcome["wall_s"])
        if (cand_dir / "preference.json").exists():
            pref = json.loads((cand_dir / "preference.json").read_text())
            entry.update(
                score=pref.get("score"), bar=pref.get("threshold"), passed=pref.get("passed")
            )
        replies[name] = entry
    return {
        "check": check,
        "run_dir": str(run_dir),
        "wall_s": round(wall_s, 1),
        "best_fitness": result["best_fitness"],
        "best_reply": _name_of(Path(result["best_reward_path"]).read_text())
        if result["best_reward_path"]
        else None,
        "trained_steps": trained_steps,
        "train_wall_s": round(train_wall_s, 1),
        "preference": result.get("preference"),
        "hacking_suspects": [s["candidate"] for s in result.get("reward_hacking_suspects", [])],
        "replies": replies,
    }


def calibrate(off_run_dir: Path, work: Path) -> dict[str, Any]:
    """Every reply's score on the seed bank and on the off arm's final (grown) bank."""
    adapter = load_task(TASK)
    gamma = float(make_job(adapter, steps=None, seed=0).hyperparams.get("gamma", 0.99))
    seed = TrajectoryBank(work / "seed_bank")
    seed_bank(adapter, seed, seed=0)
    banks = {"seed": seed, "grown": TrajectoryBank(off_run_dir / "bank")}
    sandbox = ProcessSandbox()
    table: dict[str, Any] = {}
    for bank_name, bank in banks.items():
        view = BankView.load(bank, gamma)
        rows = {}
        for name, (kind, reply) in REPLIES.items():
            scores = score_bank(
                extract_code(reply), work / bank_name / name, bank.path, sandbox, gamma=gamma
            )
            result = assess(
                view.fitness, view.success, Scores.from_bank_scores(scores), 0.8, view.reference
            )
            rows[name] = {
                "kind": kind,
                "score": result.score,
                "score_undiscounted": result.pairwise_return,
                "score_per_step": result.pairwise_per_step,
                "tpe": result.tpe,
                "bar": result.threshold,
                "passed": result.passed,
            }
        table[bank_name] = {"episodes": len(view.records), "pairs": result.n_pairs, "rows": rows}
    return table


def reference_scores(work: Path) -> dict[str, Any]:
    """Each task's own (shipped) reward on its seed bank: what sets the task-relative bar."""
    out: dict[str, dict[str, Any]] = {}
    for task in REFERENCE_TASKS:
        try:
            adapter = load_task(task)
            gamma = float(make_job(adapter, steps=None, seed=0).hyperparams.get("gamma", 0.99))
            bank = TrajectoryBank(work / f"ref_{task}")
            seed_bank(adapter, bank, seed=0)
        except Exception as exc:  # a missing simulator (Box2D, MuJoCo) skips that task only
            out[task] = {"error": f"{type(exc).__name__}: {exc}"}
            continue
        view = BankView.load(bank, gamma)
        result = assess(view.fitness, view.success, view.reference, 0.8, view.reference)
        out[task] = {
            "episodes": len(view.records),
            "fitness_range": [float(view.fitness.min()), float(view.fitness.max())],
            "pairs": result.n_pairs,
            "env_reward_score": result.score,
            "bar": result.threshold,
        }
    return out


def _fmt(value: Any, spec: str = ".2f") -> str:
    return "-" if value is None else format(value, spec)


def markdown(report: dict[str, Any]) -> str:
    """The report as benchmarks/results/preference_ablation.md shows it, verdict first."""
    on, off = report["arms"]["on"], report["arms"]["off"]
    lines = [
        "# Preference-check ablation (CartPole, scripted replies)",
        "",
        f"{report['date']}, {report['machine']}; {report['steps']:,} PPO steps per candidate, "
        f"{len(ORDER)} rounds of one candidate, seed 0, the same replies and seeds in both arms.",
        "",
        "| arm | trained | training steps | best fitness (reply) | loop wall time | check time |",
        "|---|---|---|---|---|---|",
    ]
    for arm in (off, on):
        trained = sum(1 for r in arm["replies"].values() if r["status"] == "trained")
        check_s = (arm["preference"] or {}).get("check_wall_s")
        lines.append(
            f"| check {'on' if arm['check'] else 'off'} | {trained} | {arm['trained_steps']:,} | "
            f"{_fmt(arm['best_fitness'], '.4g')} ({arm['best_reply']}) | {arm['wall_s']:.0f} s | "
            f"{_fmt(check_s, '.1f')}{' s' if check_s is not None else ''} |"
        )
    saved_steps = off["trained_steps"] - on["trained_steps"]
    lines += [
        "",
        f"**Training compute saved: {report['saved_fraction']:.0%}** "
        f"({saved_steps:,} of {off['trained_steps']:,} steps); best fitness "
        f"{_fmt(off['best_fitness'], '.4g')} without the check, "
        f"{_fmt(on['best_fitness'], '.4g')} with it. Verdict: {report['verdict']}",
        "",
        "## Every reply: score, verdict, and the fitness it reached when trained anyway",
        "",
        "Scores are the pairwise agreement of the discounted return with fitness over clearly "
        "ordered pairs (the check's score), then the same with the undiscounted return and with "
        "the reward per step, on the grown bank. *Fitness, check off* is what training the reply "
        "reached in the arm without the check.",
        "",
        "| reply | kind | fitness, check off | score, seed bank | score, grown bank "
        "| undiscounted | per step | check on: verdict (score) | fitness, check on |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    seed_rows = report["calibration"]["seed"]["rows"]
    grown_rows = report["calibration"]["grown"]["rows"]
    for name, (kind, _) in REPLIES.items():
        fit = off["replies"].get(name, {}).get("fitness")
        arm_on = on["replies"].get(name, {})
        verdict = arm_on.get("category") or arm_on.get("status", "-")
        grown = grown_rows[name]
        lines.append(
            f"| {name} | {kind} | {_fmt(fit, '.4g')} | {_fmt(seed_rows[name]['score'])} | "
            f"{_fmt(grown['score'])} | {_fmt(grown['score_undiscounted'])} | "
            f"{_fmt(grown['score_per_step'])} | {verdict} ({_fmt(arm_on.get('score'))}) | "
            f"{_fmt(arm_on.get('fitness'), '.4g')} |"
        )
    lines += [
        "",
        f"Banks: seed {report['calibration']['seed']['episodes']} episodes, grown "
        f"{report['calibration']['grown']['episodes']} (the off arm's bank after all its "
        "trainings). The bar is 0.8 on CartPole (the environment's own reward scores 1.0 there).",
        "",
        "## The environment's own reward on each task's seed bank (the task-relative bar)",
        "",
        "| task | episodes | fitness range | clear pairs | env reward score | bar |",
        "|---|---|---|---|---|---|",
    ]
    for task, row in report["reference"].items():
        if "error" in row:
            lines.append(f"| {task} | skipped: {row['error']} | | | | |")
            continue
        low, high = row["fitness_range"]
        lines.append(
            f"| {task} | {row['episodes']} | {low:.3g} .. {high:.3g} | {row['pairs']} | "
            f"{_fmt(row['env_reward_score'])} | {_fmt(row['bar'])} |"
        )
    return "\n".join(lines) + "\n"


def main() -> int:
    """Both arms on the same scripted replies; the check passes at >= 30% steps saved, no loss."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=10_000)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    os.environ.pop("REWARDSMITH_MODEL", None)
    with tempfile.TemporaryDirectory(prefix="preference-ablation-") as tmp:
        work = Path(tmp)
        arms = {
            "off": run_arm(False, args.steps, work / "off"),
            "on": run_arm(True, args.steps, work / "on"),
        }
        calibration = calibrate(Path(arms["off"]["run_dir"]), work / "calibration")
        reference = reference_scores(work / "reference")
    saved = 1 - arms["on"]["trained_steps"] / max(arms["off"]["trained_steps"], 1)
    no_loss = (arms["on"]["best_fitness"] or float("-inf")) >= (
        arms["off"]["best_fitness"] or float("-inf")
    )
    verdict = (
        "the check earns its place (>= 30% saved, no loss in best fitness)"
        if saved >= 0.30 and no_loss
        else f"the check does NOT meet the bar (saved {saved:.0%}, best fitness "
        f"{'kept' if no_loss else 'lost'})"
    )
    report = {
        "date": dt.date.today().isoformat(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "task": TASK,
        "steps": args.steps,
        "order": ORDER,
        "arms": arms,
        "saved_fraction": saved,
        "best_fitness_kept": no_loss,
        "verdict": verdict,
        "calibration": calibration,
        "reference": reference,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "preference_ablation.json").write_text(json.dumps(report, indent=2, default=str))
    (args.out / "preference_ablation.md").write_text(markdown(report))
    print(markdown(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
