"""The HTML report of a run: one self-contained page (figures inlined, no external files or fonts)
plus the same figures as PNG files, drawn with matplotlib's Agg renderer (no display needed).

Figures: best fitness per round against the human and sparse rewards, every candidate's fitness
per round, the best reward's components over training, and the final evaluation with error bars.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rewardsmith import __version__
from rewardsmith.runs.atomic import write_text
from rewardsmith.runs.layout import REPORT_PAGE
from rewardsmith.runs.versus_human import held_up_text, versus_human_text
from rewardsmith.runs.views import CandidateView, RoundView, RunView
from rewardsmith.untrusted_text import plain

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

COLORS = {"best": "#c2410c", "human": "#1d4ed8", "sparse": "#6b7280", "trained": "#0f766e"}


@dataclass
class FigureFile:
    """One drawn figure: its PNG file, a title and what it shows."""

    path: Path
    title: str
    caption: str


def write_report(view: RunView, out: Path) -> tuple[Path, list[Path]]:
    """Draw the figures into `out`, write `out/report.html`; return the page and the PNGs."""
    out.mkdir(parents=True, exist_ok=True)
    figures: dict[str, FigureFile | str] = {}
    with _literal_text():
        for name, title, draw in _drawers():
            drawn = draw(view)
            if isinstance(drawn, str):
                figures[name] = drawn  # why there is nothing to draw
                (out / f"{name}.png").unlink(missing_ok=True)  # from an earlier report
                continue
            figure, caption = drawn
            path = out / f"{name}.png"
            figure.savefig(path, dpi=110)
            figures[name] = FigureFile(path, title, caption)
    page = out / REPORT_PAGE
    write_text(page, render_html(view, figures))
    return page, [f.path for f in figures.values() if isinstance(f, FigureFile)]


def render_html(view: RunView, figures: dict[str, FigureFile | str]) -> str:
    """The page; every value is escaped, and figures are inlined as data: URIs."""
    sections = [_overview(view)]
    for name, title, _ in _drawers():
        figure = figures.get(name)
        if isinstance(figure, FigureFile):
            data = base64.b64encode(figure.path.read_bytes()).decode("ascii")
            sections.append(
                f"<section><h2>{_e(figure.title)}</h2>"
                f'<figure><img src="data:image/png;base64,{data}"'
                f' alt="{_e(figure.title)}" data-file="{_e(figure.path.name)}">'
                f"<figcaption>{_e(figure.caption)}</figcaption></figure></section>"
            )
        elif figure:
            sections.append(
                f'<section><h2>{_e(title)}</h2><p class="note">{_e(figure)}</p></section>'
            )
        if name == "evaluation":
            sections.append(_evaluation_table(view))
    sections += [_videos(view), _judge(view), _rounds(view), _best_code(view)]
    title = f"RewardSmith run {view.run_id}"
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body><main>"
        f"<h1>{_e(title)}</h1>"
        + "\n".join(sections)
        + f"<footer>Written by rewardsmith {_e(__version__)}"
        f" from {_e(str(view.path))}.</footer></main></body></html>\n"
    )


VIDEO_INLINE_BYTES = 24 * 1024 * 1024  # beyond this the page names the remaining files instead


def _videos(view: RunView) -> str:
    """The rollout videos, inlined like the figures (the page stays one self-contained file)
    up to `VIDEO_INLINE_BYTES` in all; the rest are named by path."""
    if not view.videos:
        return ""
    parts, budget = [], VIDEO_INLINE_BYTES
    for label, path in view.videos:
        size = path.stat().st_size
        if size > budget:
            parts.append(f"<p class='note'>{_e(label)}: {_e(str(path))}</p>")
            continue
        budget -= size
        data = base64.b64encode(path.read_bytes()).decode("ascii")
        parts.append(
            f'<figure><video controls muted loop playsinline preload="metadata"'
            f' src="data:video/mp4;base64,{data}" data-file="{_e(str(path))}"></video>'
            f"<figcaption>{_e(label)}</figcaption></figure>"
        )
    return (
        "<section><h2>Rollout videos</h2><p class='note'>The first evaluation episode of each "
        "filmed policy, rendered in the sandbox.</p><div class='videos'>"
        + "".join(parts)
        + "</div></section>"
    )


def _judge(view: RunView) -> str:
    """The video judge's verdicts (`--judge vlm`), beside each candidate's fitness; selection
    stays on fitness, and each round's disagreement between the two is said."""
    rows = [
        f"<tr><td>{_e(c.key)}</td><td class='num'>{_f(c.fitness)}</td><td>{_e(verdict)}</td></tr>"
        for c in view.candidates
        if (verdict := c.judge_verdict()) is not None
    ]
    if not rows:
        return ""
    notes = [
        f"<p class='note'>{_e(r.label)}: {_e(str(r.summary['judge_note']))}</p>"
        for r in view.rounds
        if r.summary and r.summary.get("judge_note")
    ]
    return (
        "<section><h2>Video judge</h2><table><tr><th>candidate</th><th>fitness</th>"
        "<th>verdict</th></tr>" + "".join(rows) + "</table>" + "".join(notes) + "</section>"
    )


def _overview(view: RunView) -> str:
    config = view.config
    best = view.best
    rows = [
        ("task", view.task),
        ("designer", view.designer),
        ("state", view.status + (f" ({view.stop_reason})" if view.stop_reason else "")),
        ("started", str(view.info.get("created_at", "?"))),
        (
            "budget",
            f"{config.get('rounds')} rounds x {config.get('samples')} candidates, "
            f"{config.get('steps') or 'task default'} training steps, seed {config.get('seed')}",
        ),
        ("best candidate", f"{best.key}, fitness {_f(best.fitness)}" if best else "none trained"),
        ("LLM", f"{view.llm_calls} calls, {view.tokens:,} tokens, ${view.cost_usd:.4f}"),
    ]
    if view.info.get("error"):
        rows.append(("error", str(view.info["error"])))
    packages = view.info.get("packages") or {}
    if packages:
        rows.append(("versions", ", ".join(f"{k} {v}" for k, v in packages.items())))
    cells = "".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in rows)
    score = view.human_normalized_score
    headline = (
        f'<p class="score">human-normalised score <strong>{_f(score, ".2f")}</strong> '
        "(0 = the sparse reward, 1 = the human reward, above 1 = better than the human reward)</p>"
        if score is not None
        else '<p class="note">No final evaluation with human and sparse rewards: no '
        "human-normalised score.</p>"
    )
    return f"<section>{headline}<table class='meta'>{cells}</table></section>"


def _evaluation_table(view: RunView) -> str:
    if not view.evaluation:
        return ""
    rows = []
    for name in ("best", "human", "sparse"):
        entry = view.evaluation.get(name) or {}
        if not entry:
            continue
        seeds = ", ".join(_f(v) for v in entry.get("per_seed", []))
        rows.append(
            f"<tr><th>{_e(name)}</th><td>{_f(entry.get('fitness'))}</td>"
            f"<td>{_f(entry.get('fitness_std'))}</td><td>{_e(seeds)}</td>"
            f"<td>{_e(entry.get('failed_seeds', 0))}</td></tr>"
        )
    notes = [
        text
        for text in (
            versus_human_text(view.evaluation.get("versus_human")),
            held_up_text(view.evaluation.get("held_up")),
            view.finals_text(),
        )
        if text
    ]
    return (
        "<table><thead><tr><th>reward</th><th>mean fitness</th><th>std</th><th>per seed</th>"
        f"<th>failed seeds</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
        + "".join(f"<p>{_e(note)}</p>" for note in notes)
    )


def _rounds(view: RunView) -> str:
    if not view.rounds:
        return "<section><h2>Rounds</h2><p class='note'>No round has started yet.</p></section>"
    rows = []
    for r in view.rounds:
        for c in r.candidates:
            marks = (" ★ round best" if c.is_round_best else "") + (
                " ★ run best" if c.is_best else ""
            )
            rows.append(
                f"<tr class='{_e(c.status)}'><td class='nowrap'>{_e(r.label)}</td>"
                f"<td class='nowrap'>{_e(c.key)}</td>"
                f"<td>{_e(c.fate + marks)}</td><td class='num'>{_f(c.fitness)}</td>"
                f"<td class='num'>{_e(f'{c.steps:,}' if c.steps is not None else '-')}</td>"
                f"<td>{_e(c.parent or '-')}</td></tr>"
            )
    table = (
        "<table><thead><tr><th>round</th><th>candidate</th><th>fate</th><th>fitness</th>"
        f"<th>steps</th><th>parent</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )
    last = next((r.reflection for r in reversed(view.rounds) if r.reflection), None)
    reflection = ""
    if last is not None:
        lines = last.without_code()
        reflection = (
            f"<h3>Reflection on {_e(last.key)}, the best so far (what a next round's prompt "
            "carries)</h3>"
            f"<pre>{_e(lines)}</pre>"
        )
    return f"<section><h2>Rounds</h2>{table}{reflection}</section>"


def _best_code(view: RunView) -> str:
    best = view.best
    code = best.code() if best else None
    if best is None or code is None:
        return (
            "<section><h2>Best reward</h2><p class='note'>No candidate was trained.</p></section>"
        )
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import PythonLexer

    # Control and bidi characters shown as escapes: bidi overrides in code reorder what a reader
    # sees (Trojan Source). `rewardsmith export` still writes the code byte for byte.
    formatter = HtmlFormatter(noclasses=True, nobackground=True)
    highlighted = highlight(plain(code), PythonLexer(), formatter)
    return (
        f"<section><h2>Best reward: {_e(best.key)} (fitness {_f(best.fitness)})</h2>"
        f"<div class='code'>{highlighted}</div>"
        f"<p class='note'>Export it with <code>rewardsmith export {_e(view.run_id)}</code>.</p>"
        "</section>"
    )


# Figures: each returns (figure, caption), or a sentence saying why there is nothing to draw.

Drawer = Callable[[RunView], "tuple[Figure, str] | str"]


def _drawers() -> list[tuple[str, str, Drawer]]:
    """(file stem, title, drawing function) of each figure, in page order."""
    return [
        ("fitness", "Best fitness per round", _fitness_per_round),
        ("candidates", "Every candidate's fitness", _candidates),
        ("components", "The best reward's components over training", _components),
        ("evaluation", "Final evaluation", _evaluation),
    ]


def _literal_text() -> AbstractContextManager[None]:
    """Every text drawn inside shown as written: no mathtext (`$...$`) and no LaTeX.

    Figures carry reward-sourced text (component names); parsed as mathtext, a name such as
    `$\\frac{$` made savefig raise and `rewardsmith report` exit 1 (issue 30).
    """
    import matplotlib

    return matplotlib.rc_context({"text.parse_math": False, "text.usetex": False})


def _figure(height: float = 3.6, rows: int = 1) -> tuple[Figure, list[Axes]]:
    from matplotlib.figure import Figure

    figure = Figure(figsize=(7.5, height), layout="constrained")
    axes = figure.subplots(rows, 1, sharex=True, squeeze=False)
    return figure, [row[0] for row in axes]


def _finished(view: RunView) -> list[RoundView]:
    return [r for r in view.rounds if r.finished]


def _round_labels(rounds: list[RoundView]) -> list[str]:
    return [f"{r.round}" + (f"\nretry {r.attempt}" if r.attempt else "") for r in rounds]


def _fitness_per_round(view: RunView) -> tuple[Figure, str] | str:
    rounds = _finished(view)
    if not any(r.best_fitness is not None for r in rounds):
        return "No round finished with a trained candidate, so there is no fitness to plot."
    figure, (ax,) = _figure()
    x = list(range(len(rounds)))
    ax.plot(
        x, _nan([r.best_fitness for r in rounds]), "-o", color=COLORS["best"], label="best so far"
    )
    ax.plot(
        x,
        _nan([r.round_best_fitness for r in rounds]),
        "s",
        mfc="none",
        color=COLORS["trained"],
        label="best of the round",
    )
    for name, style in (("human", "--"), ("sparse", ":")):
        value = view.human_fitness if name == "human" else view.sparse_fitness
        if value is not None:
            ax.axhline(
                value, ls=style, color=COLORS[name], label=f"{name} reward (final evaluation)"
            )
    _label(ax, "round", "fitness", x, _round_labels(rounds))
    caption = (
        "Fitness is the task's own success measure of a policy trained on the candidate reward. "
        "The human and sparse lines are the shipped and sparse rewards trained with the same "
        "budget on fresh seeds in the final evaluation."
    )
    if view.human_fitness is None:
        caption += " This run had no final evaluation, so there are no human or sparse lines."
    return figure, caption


def _candidates(view: RunView) -> tuple[Figure, str] | str:
    rounds = [r for r in view.rounds if r.candidates]
    if not rounds:
        return "No candidates yet."
    figure, (ax,) = _figure()
    x_all = list(range(len(rounds)))
    for x, r in enumerate(rounds):
        trained = [c for c in r.candidates if c.fitness is not None]
        offsets = _spread(len(trained))
        ax.scatter(
            [x + o for o in offsets],
            _nan([c.fitness for c in trained]),
            color=COLORS["trained"],
            alpha=0.8,
            zorder=3,
            label="trained candidate" if x == 0 else None,
        )
        for o, c in zip(offsets, trained, strict=True):
            if c.is_best:
                ax.scatter(
                    [x + o],
                    _nan([c.fitness]),
                    marker="*",
                    s=220,
                    color=COLORS["best"],
                    zorder=4,
                    label="run best",
                )
    labels = [
        label + (f"\n{others}" if (others := _not_trained(r.candidates)) else "")
        for label, r in zip(_round_labels(rounds), rounds, strict=True)
    ]
    _label(ax, "round", "fitness", x_all, labels)
    return figure, (
        "Each dot is one trained candidate; the star is the run's best. Candidates rejected by "
        "the critic or the preference check, or whose training failed, have no fitness: their "
        "numbers are printed under their round."
    )


def _components(view: RunView) -> tuple[Figure, str] | str:
    best = view.best
    checkpoints = best.checkpoints() if best else []
    if best is None or not checkpoints:
        return "No trained candidate with training checkpoints to plot."
    figure, (top, bottom) = _figure(height=5.2, rows=2)
    steps = [c["step"] for c in checkpoints]
    names = sorted({name for c in checkpoints for name in c.get("components", {})})
    series = [_nan([c.get("components", {}).get(name) for c in checkpoints]) for name in names]
    lines = [top.plot(steps, values, "-o", ms=3)[0] for values in series]
    top.set_ylabel("per-episode sum")
    top.set_title(f"{best.key}: reward components", fontsize=10, loc="left")
    top.grid(alpha=0.3)
    if names:  # labels given outright: a name starting with `_` would be left out otherwise
        top.legend(lines, [plain(name) for name in names], fontsize=8, loc="best")
    bottom.plot(
        steps,
        _nan([c.get("fitness") for c in checkpoints]),
        "-o",
        ms=3,
        color=COLORS["best"],
        label="fitness",
    )
    bottom.set_title("fitness at the same checkpoints", fontsize=10, loc="left")
    bottom.set_xlabel("training step")
    bottom.set_ylabel("fitness")
    bottom.grid(alpha=0.3)
    return figure, (
        f"The components of {best.key}'s reward, summed per evaluation episode, at each training "
        "checkpoint: the data the analyzer turns into the reflection for the next round."
    )


def _evaluation(view: RunView) -> tuple[Figure, str] | str:
    evaluation = view.evaluation or {}
    names = [
        n
        for n in ("best", "human", "sparse")
        if (evaluation.get(n) or {}).get("fitness") is not None
    ]
    if not names:
        return "This run has no final evaluation (it ran with --no-evaluate, or did not get there)."
    figure, (ax,) = _figure(height=3.4)
    means = [evaluation[n]["fitness"] for n in names]
    errors = [evaluation[n].get("fitness_std") or 0.0 for n in names]
    ax.bar(names, means, yerr=errors, capsize=8, color=[COLORS[n] for n in names], alpha=0.75)
    for i, n in enumerate(names):
        seeds = evaluation[n].get("per_seed", [])
        ax.scatter(
            [i] * len(seeds),
            seeds,
            color="black",
            s=14,
            zorder=3,
            label="one seed" if i == 0 else None,
        )
    ax.set_ylabel("fitness")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    seeds = len(evaluation[names[0]].get("per_seed", []))
    return figure, (
        f"Each reward retrained from scratch with the same budget on {seeds} fresh seed(s): mean "
        "fitness, one standard deviation as the error bar, and each seed as a dot."
    )


def _label(ax: Axes, xlabel: str, ylabel: str, ticks: list[int], labels: list[str]) -> None:
    ax.set_xlim(-0.5, len(ticks) - 0.5)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_xticks(ticks, labels)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="best")


def _spread(n: int, width: float = 0.25) -> list[float]:
    """Small x offsets so the dots of one round do not sit on top of each other."""
    if n <= 1:
        return [0.0] * n
    return [-width / 2 + width * i / (n - 1) for i in range(n)]


def _nan(values: list[Any]) -> list[float]:
    """Missing values as NaN, which matplotlib leaves out of a line."""
    return [float("nan") if v is None else float(v) for v in values]


def _not_trained(candidates: list[CandidateView]) -> str:
    counts: dict[str, int] = {}
    for c in candidates:
        if c.fitness is None:
            label = {"training": "failed"}.get(c.stage or "", "rejected")
            counts[label] = counts.get(label, 0) + 1
    return ", ".join(f"{n} {label}" for label, n in counts.items())


def _e(value: Any) -> str:
    """HTML-escaped, control and bidi characters shown as escapes (reward-sourced text)."""
    return html.escape(plain(value), quote=True)


def _f(value: float | None, spec: str = ".4g") -> str:
    return "-" if value is None else format(value, spec)


_CSS = """
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; color: #1f2937;
       background: #f9fafb; margin: 0; }
main { max-width: 960px; margin: 0 auto; padding: 24px; background: #fff; }
h1 { font-size: 1.5em; margin-top: 0; word-break: break-all; }
h2 { font-size: 1.2em; border-bottom: 1px solid #e5e7eb; padding-bottom: 4px; margin-top: 32px; }
h3 { font-size: 1em; }
table { border-collapse: collapse; width: 100%; margin: 8px 0; font-size: 0.9em; }
th, td { text-align: left; padding: 4px 8px; border-bottom: 1px solid #f3f4f6;
         vertical-align: top; }
table.meta th { width: 150px; color: #6b7280; font-weight: normal; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.nowrap { white-space: nowrap; }
tr.rejected td, tr.failed td { color: #b91c1c; }
tr.trained td { color: #065f46; }
figure { margin: 0; }
img, video { max-width: 100%; height: auto; display: block; }
video { max-height: 360px; margin-top: 12px; background: #000; }
.videos { display: grid; grid-template-columns: repeat(auto-fill, minmax(280px, 1fr)); gap: 12px; }
figcaption, .note, footer { color: #6b7280; font-size: 0.9em; }
.score { font-size: 1.1em; }
pre, .code { background: #f3f4f6; padding: 10px; overflow-x: auto; font-size: 0.85em;
             border-radius: 4px; white-space: pre-wrap; }
.code pre { margin: 0; padding: 0; }
footer { margin-top: 32px; }
"""
