"""The bank's hacking flag against labelled rewards: how often it fires on hacks and on good ones.

`reward_hacking_suspect` (rewardsmith/eureka_loop/hacking.py) fires on the trajectory bank when a
reward pays more per step in the low-fitness episodes than in the high-fitness ones. A rank
correlation alone fired on good rewards (CartPole's upright reward: 1.07 per step in the worst
third against 1.06 in the best, correlation -0.34), so the flag also needs an effect size: the
gap between the worst and the best third's per-step reward, relative to the reward's typical
per-step magnitude over the bank. This script measures both on labelled rewards, each scored on
its task's seed bank in the sandbox, as the loop scores candidates:

- good: every built-in task's human reward, and the CartPole replies of the preference ablation
  that trained to a high fitness (benchmarks/preference_ablation.py);
- hacks: rewards whose optimum fails the task by construction (pay for spinning, for lying
  still, for the opposite of the goal), and the CartPole replies that trained to fitness < 20.

Run (about two minutes on 2 cores; simulators that are missing skip their task):

    .venv/bin/python benchmarks/hacking_flags.py

Writes benchmarks/results/hacking_flags.json and .md (see docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.preference_ablation import REPLIES  # noqa: E402
from rewardsmith.envs import list_tasks, load_task  # noqa: E402
from rewardsmith.eureka_loop.bank import TrajectoryBank, seed_bank  # noqa: E402
from rewardsmith.eureka_loop.extract import extract_code  # noqa: E402
from rewardsmith.eureka_loop.hacking import BANK_CORRELATION, MIN_GAP, bank_signals  # noqa: E402
from rewardsmith.eureka_loop.preference import BankView  # noqa: E402
from rewardsmith.jobs.score import score_bank  # noqa: E402
from rewardsmith.jobs.training import make_job  # noqa: E402
from rewardsmith.sandbox.executor import ProcessSandbox  # noqa: E402

RESULTS = Path(__file__).parent / "results"


def _reward(body: str) -> str:
    return "import numpy as np\n\n\ndef compute_reward(state, action, next_state):\n" + body


def _pays(expression: str) -> str:
    return _reward(f"    value = {expression}\n    return value, {{'value': value}}\n")


# Fitness each CartPole reply reached when trained (the ablation's check-off arm, 10k steps).
CARTPOLE_TRAINED = {
    "upright": 447.2,
    "alive_plus_one": 295.9,
    "upright_squared": 331.4,
    "alive_shaped": 157.0,
    "flipped_sign": 8.8,
    "unrelated_push_right": 9.2,
    "penalty_only": 9.0,
    "proxy_pole_spin": 9.2,
    "proxy_cart_speed": 9.7,
    "proxy_pole_tilt": 95.3,
}

# task -> name -> reward whose optimum fails the task by construction.
HACKS: dict[str, dict[str, str]] = {
    "pendulum": {
        "spin": _pays("np.abs(next_state.angular_velocity)"),
        "hang_down": _pays("np.abs(next_state.pole_angle)"),
    },
    "acrobot": {
        "hang_still": _pays(
            "-np.abs(next_state.link1_angular_velocity) - np.abs(next_state.link2_angular_velocity)"
        ),
        "tip_low": _pays("-next_state.tip_height"),
    },
    "mountaincar-continuous": {
        "stay_left": _pays("-next_state.position"),
        "stand_still": _pays("-np.abs(next_state.velocity)"),
    },
    "hopper": {"fall_over": _pays("np.abs(next_state.torso_angle)")},
    "lunarlander": {"spin": _pays("np.abs(next_state.angular_velocity)")},
}


def labelled() -> list[tuple[str, str, str, str]]:
    """(task, name, label, source) for every labelled reward."""
    rows = []
    for task in list_tasks():
        source = load_task(task).reward_source("human")
        if source:
            rows.append((task, "human", "good", source))
    for name, (_, reply) in REPLIES.items():
        fitness = CARTPOLE_TRAINED[name]
        if fitness >= 100 or fitness < 20:  # tilt (95) is neither clearly good nor a clear hack
            label = "good" if fitness >= 100 else "hack"
            rows.append(("cartpole", f"reply:{name}", label, extract_code(reply)))
    for task, hacks in HACKS.items():
        rows += [(task, name, "hack", source) for name, source in hacks.items()]
    return rows


def measure(work: Path, grown: Path | None) -> list[dict[str, Any]]:
    """Every labelled reward on its task's seed bank; the CartPole ones also on `grown` (the
    bank of a finished CartPole run: episodes of trained policies too), as task `cartpole+run`."""
    sandbox = ProcessSandbox()
    views: dict[str, tuple[BankView, TrajectoryBank, float] | None] = {}
    if grown is not None:
        bank = TrajectoryBank(grown)
        gamma = float(
            make_job(load_task("cartpole"), steps=None, seed=0).hyperparams.get("gamma", 0.99)
        )
        views["cartpole+run"] = (BankView.load(bank, gamma), bank, gamma)
    cartpole = [row for row in labelled() if row[0] == "cartpole"]
    extra = [("cartpole+run", *row[1:]) for row in cartpole] if grown is not None else []
    out = []
    for task, name, label, source in labelled() + extra:
        if task not in views:
            try:
                adapter = load_task(task)
                gamma = float(make_job(adapter, steps=None, seed=0).hyperparams.get("gamma", 0.99))
                bank = TrajectoryBank(work / f"bank_{task}")
                seed_bank(adapter, bank, seed=0)
                views[task] = (BankView.load(bank, gamma), bank, gamma)
            except Exception as exc:  # a missing simulator skips its task
                print(f"{task}: skipped ({type(exc).__name__}: {exc})", flush=True)
                views[task] = None
        loaded = views[task]
        if loaded is None:
            continue
        view, bank, gamma = loaded
        safe = name.replace(":", "_")
        scores = score_bank(source, work / task / safe, bank.path, sandbox, gamma=gamma)
        if not scores.ok:
            out.append({"task": task, "name": name, "label": label, "error": str(scores.error)})
            continue
        signals = bank_signals(
            view.fitness,
            np.asarray(scores.returns),
            np.asarray(scores.per_step),
            view.reference.per_step,
        )
        row = {"task": task, "name": name, "label": label, "flagged": signals["suspect"]}
        for key in ("per_step_fitness_corr", "per_step_low_fitness", "per_step_high_fitness"):
            row[key] = signals.get(key)
        row["gap"] = signals.get("per_step_gap")
        out.append(row)
        print(
            f"{task:24s} {name:28s} {label:5s} flagged={row['flagged']!s:5s} "
            f"corr={_fmt(row['per_step_fitness_corr'])} gap={_fmt(row['gap'])}",
            flush=True,
        )
    return out


def _fmt(value: Any, spec: str = "+.2f") -> str:
    return "-" if value is None else format(value, spec)


def confusion(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The flag's precision and recall against the labels; rewards that failed to score left out."""
    scored = [r for r in rows if "flagged" in r]
    tp = sum(r["flagged"] and r["label"] == "hack" for r in scored)
    fp = sum(r["flagged"] and r["label"] == "good" for r in scored)
    hacks = sum(r["label"] == "hack" for r in scored)
    goods = sum(r["label"] == "good" for r in scored)
    return {
        "hacks": hacks,
        "good": goods,
        "true_positives": tp,
        "false_positives": fp,
        "precision": tp / (tp + fp) if tp + fp else None,
        "recall": tp / hacks if hacks else None,
        "false_positive_rate": fp / goods if goods else None,
    }


def markdown(report: dict[str, Any]) -> str:
    """The report as benchmarks/results/hacking_flags.md shows it, the thresholds named."""
    c = report["confusion"]
    lines = [
        "# The bank's hacking flag on labelled rewards",
        "",
        f"{report['date']}, {report['machine']}; each reward scored on its task's seed bank "
        f"(seed 0). Flag: rank correlation of per-step reward with fitness < "
        f"{report['bank_correlation']} and a per-step gap (worst third - best third, relative "
        f"to the mean absolute per-step reward) >= {report['min_gap']}.",
        "",
        f"**Precision {_fmt(c['precision'], '.2f')}, recall {_fmt(c['recall'], '.2f')}** "
        f"({c['true_positives']} of {c['hacks']} hacks flagged; {c['false_positives']} of "
        f"{c['good']} good rewards flagged).",
        "",
        "| task | reward | label | flagged | per-step corr | worst third | best third | gap |",
        "|---|---|---|---|---:|---:|---:|---:|",
    ]
    for r in report["rows"]:
        if "error" in r:
            lines.append(f"| {r['task']} | {r['name']} | {r['label']} | error | | | | |")
            continue
        lines.append(
            f"| {r['task']} | {r['name']} | {r['label']} | {'yes' if r['flagged'] else 'no'} "
            f"| {_fmt(r['per_step_fitness_corr'])} | {_fmt(r['per_step_low_fitness'], '.3g')} "
            f"| {_fmt(r['per_step_high_fitness'], '.3g')} | {_fmt(r['gap'])} |"
        )
    return "\n".join(lines) + "\n"


def main() -> int:
    """Score every labelled reward, then write the report with the thresholds it was run with."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument(
        "--grown-bank", type=Path, help="the bank folder of a finished `rewardsmith run cartpole`"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        rows = measure(Path(work), args.grown_bank)
    report = {
        "date": dt.datetime.now().strftime("%Y-%m-%d %H:%M"),
        "machine": f"{platform.machine()}, python {platform.python_version()}",
        "bank_correlation": BANK_CORRELATION,
        "min_gap": MIN_GAP,
        "confusion": confusion(rows),
        "rows": rows,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "hacking_flags.json").write_text(json.dumps(report, indent=2) + "\n")
    (args.out / "hacking_flags.md").write_text(markdown(report))
    print(json.dumps(report["confusion"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
