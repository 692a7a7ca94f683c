"""`--videos` in the loop: the round's best and the final evaluation's arms are filmed, `all`
films every trained candidate, `none` films nothing, and a task that cannot render runs to the
end with the reason said once."""

from __future__ import annotations

from pathlib import Path

import pytest

from rewardsmith.eureka_loop.runner import start_run
from rewardsmith.eureka_loop.state import LoopConfig
from rewardsmith.runs.candidate import CandidateKey
from rewardsmith.runs.report import write_report
from rewardsmith.runs.store import RunStore
from rewardsmith.runs.views import load_view
from rewardsmith.sandbox.video_file import check_video
from tests.reporters import Messages


def _videos(run_dir: Path) -> list[str]:
    return sorted(str(p.parent.relative_to(run_dir)) for p in run_dir.rglob("rollout.mp4"))


@pytest.mark.slow
def test_a_task_that_cannot_render_runs_to_the_end_and_says_why_once(tmp_path: Path) -> None:
    config = LoopConfig(
        task_id="line", rounds=1, samples=2, eval_seeds=1, sandbox="process", videos="best"
    )
    messages = Messages()
    result = start_run(config, tmp_path, reporter=messages)
    run_dir = Path(result["run_dir"])
    assert result["best_fitness"] is not None
    told = [line for line in messages.lines if line.startswith("no rollout video")]
    assert len(told) == 1 and "cannot render" in told[0]
    assert _videos(run_dir) == []
    # Each filmed folder keeps why, so a resume does not try again.
    run = RunStore(tmp_path).open_run(run_dir)
    best = result["best_candidate"]
    note = run.candidate(CandidateKey.parse(best)).video_note()
    assert note is not None and note["frames"] == 0 and "cannot render" in note["reason"]


@pytest.mark.slow
def test_best_films_each_round_best_and_the_final_arms_all_films_every_candidate(
    tmp_path: Path,
) -> None:
    common = dict(task_id="cartpole", rounds=1, samples=2, steps=2048, eval_seeds=1)
    best_run = start_run(LoopConfig(**common, sandbox="process", videos="best"), tmp_path / "best")
    run_dir = Path(best_run["run_dir"])
    best = best_run["best_candidate"]
    round_best = f"round_00/cand_{best[4:6]}"
    filmed = _videos(run_dir)
    assert round_best in filmed
    assert {"evaluation/best_s0", "evaluation/sparse_s0"} <= set(filmed)
    assert all(check_video(run_dir / f / "rollout.mp4", 8 << 20) is None for f in filmed)
    assert best_run["videos"] == sorted(str(run_dir / f / "rollout.mp4") for f in filmed)
    # `show` and the report list them; the report plays them inline.
    view = load_view(RunStore(tmp_path / "best").open_run(run_dir))
    labels = [label for label, _ in view.videos]
    assert labels[0] == "final evaluation: the best reward"
    assert any(label.startswith(f"{best}, the run's best") for label in labels)
    page, _ = write_report(view, tmp_path / "report")
    html = page.read_text()
    assert html.count("<video ") == len(filmed) and "data:video/mp4;base64," in html

    all_run = start_run(
        LoopConfig(**common, sandbox="process", videos="all", evaluate=False), tmp_path / "all"
    )
    all_dir = Path(all_run["run_dir"])
    trained = [
        c
        for c in RunStore(tmp_path / "all").open_run(all_dir).candidates()
        if c["status"] == "trained"
    ]
    assert _videos(all_dir) == sorted(f"round_00/cand_{c['idx']:02d}" for c in trained)

    none_run = start_run(
        LoopConfig(**common, sandbox="process", videos="none", evaluate=False), tmp_path / "none"
    )
    assert _videos(Path(none_run["run_dir"])) == []
