"""The commands that look at a run (runs, show, inspect, replay, export), on a real loop run."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rewardsmith.atomic import write_record
from rewardsmith.cli import app
from rewardsmith.reward.static import check_source
from rewardsmith.runs.schema import read_record
from rewardsmith.runs.store import RunStore
from rewardsmith.runs.views import CandidateView, load_view, sparkline
from tests.runs.recorded import copy_run, recorded_run

pytestmark = pytest.mark.slow

runner = CliRunner()


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return recorded_run(tmp_path_factory)


def invoke(*args: str | Path) -> tuple[int, str]:
    result = runner.invoke(app, [str(a) for a in args])
    assert "Traceback" not in result.output, result.output
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.output


def flat(text: str) -> str:
    """The output with line wrapping undone (rich wraps at 80 columns when not in a terminal)."""
    return " ".join(text.split())


def candidates(run_dir: Path) -> dict[str, dict]:
    with RunStore(run_dir.parent).open_run(run_dir) as run:
        return {f"r{c['round']:02d}c{c['idx']:02d}": c for c in run.candidates()}


def test_runs_lists_one_line_per_run_and_filters_by_task(run_dir: Path) -> None:
    code, out = invoke("runs", "--runs-dir", run_dir.parent)
    assert code == 0
    line = next(line for line in out.splitlines() if line.startswith(run_dir.name))
    info = read_record(run_dir / "run.json")
    best = info["summary"]["best_fitness"]
    for cell in ("cartpole", "openai/scripted", f"{best:.4g}", "$0.0000", "finished"):
        assert cell in line, (cell, line)
    assert f"{info['summary']['human_normalized_score']:.2f}" in line
    assert line.split()[3] == "2"  # rounds

    code, out = invoke("runs", "--runs-dir", run_dir.parent, "--task", "pendulum")
    assert code == 0 and "no runs" in out and run_dir.name not in out
    code, out = invoke("runs", "--runs-dir", run_dir.parent, "--task", "cartpole", "--json")
    assert [r["run_id"] for r in json.loads(out)] == [run_dir.name]


def test_show_gives_every_candidate_its_fate_the_reflection_and_spend(run_dir: Path) -> None:
    code, out = invoke("show", run_dir.name[:15], "--runs-dir", run_dir.parent)
    assert code == 0, out
    rows = candidates(run_dir)
    assert len(rows) == 4
    for key, row in rows.items():
        line = next(line for line in out.splitlines() if key in line and "│" in line)
        if row["status"] == "trained":
            assert "trained" in line and f"{row['fitness']:.4g}" in line
        elif row["category"] == "extract_error":
            assert "no usable code (extract_error" in line
        else:
            assert "rejected by the critic (syntax_error" in line
    assert out.count("★ round best") == 2 and out.count("★ run best") == 1
    assert "reflection on r00c0" in out and "fed forward to round 1" in flat(out)
    assert "advice:" in out or "fitness: [" in out
    with RunStore(run_dir.parent).open_run(run_dir) as run:
        totals = run.totals()
    assert f"LLM: 4 calls, {totals['tokens']:,} tokens" in out
    assert "round 0  2 LLM calls" in out and "round 1  2 LLM calls" in out


def scalars(log: Path) -> dict[str, list[tuple[int, float]]]:
    """Every scalar curve of one TensorBoard log folder, read with TensorBoard's own reader."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(log))
    events.Reload()
    return {
        tag: [(e.step, e.value) for e in events.Scalars(tag)] for tag in events.Tags()["scalars"]
    }


def test_show_tensorboard_prints_the_command_for_every_trainings_curves(run_dir: Path) -> None:
    code, out = invoke("show", run_dir.name, "--runs-dir", run_dir.parent, "--tensorboard")
    assert code == 0, out
    assert f"tensorboard --logdir {run_dir}" in flat(out)
    code, out = invoke(
        "show", run_dir.name, "--runs-dir", run_dir.parent, "--tensorboard", "--json"
    )
    data = json.loads(out)
    # `tensorboard` on PATH, or the one beside this interpreter (the venv, not activated).
    assert data["command"].endswith(f"tensorboard --logdir {run_dir}") and data["note"] is None
    assert Path(data["command"].split()[0]).name == "tensorboard"
    logs = [Path(log) for log in data["logs"]]
    # Both trained candidates, and the final evaluation's arms (best, human, sparse; one seed).
    trained = [k for k, c in candidates(run_dir).items() if c["status"] == "trained"]
    for key in trained:
        folder = run_dir / f"round_{int(key[1:3]):02d}" / f"cand_{int(key[4:]):02d}" / "job"
        assert any(log.is_relative_to(folder) for log in logs), (key, logs)
    assert sum(log.is_relative_to(run_dir / "evaluation") for log in logs) >= 3
    for log in logs:
        curves = scalars(log)
        # SB3's own curves beside each reflection checkpoint's fitness and reward terms.
        assert "train/value_loss" in curves, sorted(curves)
        fitness = curves["eval/fitness"]
        assert len(fitness) >= 2 and all(v >= 8 for _, v in fitness)  # CartPole lasts >= 8 steps
        assert "reward/total" in curves
        assert any(tag.startswith("reward_terms/") for tag in curves)
        steps = [step for step, _ in fitness]
        assert steps == sorted(steps) and steps[-1] >= 1_000


def test_show_tensorboard_says_why_a_run_has_no_logs(run_dir: Path, tmp_path: Path) -> None:
    copy = copy_run(run_dir, tmp_path / "runs")  # without the training folders
    code, out = invoke("show", copy.name, "--runs-dir", copy.parent, "--tensorboard")
    assert code == 0 and "no TensorBoard logs in this run" in flat(out)
    assert "pip install tensorboard" in flat(out) and "--logdir" not in out


def test_inspect_shows_the_best_code_by_default(run_dir: Path) -> None:
    view = load_view(RunStore(run_dir.parent).open_run(run_dir))
    assert view.best is not None
    code, out = invoke("inspect", run_dir, "--runs-dir", run_dir.parent)
    assert code == 0
    assert f"{view.best.key} of run {run_dir.name}" in out
    assert (view.best.path / "reward.py").read_text() in out  # plain, so it can be piped to a file


def test_inspect_prompt_response_and_diff(run_dir: Path) -> None:
    trained = [
        k
        for k, c in candidates(run_dir).items()
        if k.startswith("r01") and c["status"] == "trained"
    ]
    (key,) = trained
    cand_dir = run_dir / "round_01" / f"cand_{int(key[-2:]):02d}"
    recorded = read_record(cand_dir / "prompt.json")
    code, out = invoke("inspect", run_dir, "-c", key, "--prompt", "--response", "--diff")
    assert code == 0, out
    assert recorded["prompt_hash"] in out
    for message in recorded["messages"]:
        assert message["content"] in out  # the exact prompt, markup characters and all
    assert (cand_dir / "response.md").read_text() in out
    parent = candidates(run_dir)[key]["parent"]
    assert parent.startswith("r00")
    assert f"--- {parent}/reward.py" in out and f"+++ {key}/reward.py" in out
    assert "+    alive = np.ones_like(next_state.pole_angle)" in out
    # By round and index, too; round 0 has no parent to diff against.
    code, out = invoke("inspect", run_dir, "--round", "0", "--candidate", "0", "--diff")
    assert code == 0 and "r00c00 has no parent" in out


def test_inspect_a_candidate_without_code_says_so(run_dir: Path) -> None:
    (key,) = [k for k, c in candidates(run_dir).items() if c["category"] == "extract_error"]
    code, out = invoke("inspect", run_dir, "-c", key)
    assert code == 1 and f"{key} has no reward code" in flat(out) and "--response" in out
    code, out = invoke("inspect", run_dir, "-c", key, "--response")
    assert code == 0 and "I am sorry" in out
    code, out = invoke("inspect", run_dir, "-c", "r07c00")
    assert code == 1 and "has no candidate r07c00" in flat(out)


def test_replay_prints_every_round_when_not_in_a_terminal(run_dir: Path) -> None:
    code, out = invoke("replay", run_dir)
    assert code == 0, out
    assert "round 0  (1 of 2)" in out and "round 1  (2 of 2)" in out
    assert "Enter" not in out  # never waits when stdin/stdout are not a terminal
    assert "best so far per round: " in out
    assert any(ch in out for ch in "▁▂▃▄▅▆▇█")
    assert "the round's best, against r00c0" in out  # the round-1 best diffed against its parent
    code, out = invoke("replay", run_dir, "--seed", "3")
    assert code == 1 and "only apply with --rerun" in flat(out)


def test_export_writes_a_standalone_reward_with_its_provenance(
    run_dir: Path, tmp_path: Path
) -> None:
    view = load_view(RunStore(run_dir.parent).open_run(run_dir))
    assert view.best is not None
    out_file = tmp_path / "best.py"
    code, out = invoke("export", run_dir, "--out", out_file)
    assert code == 0 and str(out_file) in out
    text = out_file.read_text()
    assert text.startswith("# Reward function found by RewardSmith")
    assert f"# run:        {run_dir.name} ({run_dir})" in text
    assert f"# candidate:  {view.best.key}" in text
    assert "# evaluation:" in text and "human-normalised" in text
    assert text.endswith((view.best.path / "reward.py").read_text())
    check_source(text)  # still a valid reward under the contract (the header is comments only)
    code, out = invoke("export", run_dir, "--out", "-")
    assert code == 0 and out.startswith("# Reward function") and out.endswith(text[-200:])


def test_export_and_report_never_replace_a_users_file(run_dir: Path, tmp_path: Path) -> None:
    """`export -o` overwrote an existing file, and `report --out FILE` ended in a traceback."""
    mine = tmp_path / "mine.py"
    mine.write_text("my own reward\n")
    code, out = invoke("export", run_dir, "--out", mine)
    assert code == 1 and "exists" in out and "--force" in out
    assert mine.read_text() == "my own reward\n"
    code, out = invoke("export", run_dir, "--out", mine, "--force")
    assert code == 0 and mine.read_text().startswith("# Reward function found by RewardSmith")
    code, out = invoke("report", run_dir, "--out", mine)
    assert code == 1 and "is a file, not a directory" in flat(out)
    assert mine.read_text().startswith("# Reward function found by RewardSmith")


def test_an_unknown_candidate_lists_the_runs_candidates_not_the_runs(run_dir: Path) -> None:
    code, out = invoke("inspect", run_dir, "--candidate", "r09c09")
    assert code == 1 and "has no candidate r09c09 (it has: r00c00" in flat(out)
    assert "rewardsmith runs" not in out


def test_fates_name_the_step_that_stopped_a_candidate() -> None:
    def fate(status: str, category: str | None = None) -> str:
        c = CandidateView(0, 1, 0, status, category, "why", None, None, None, Path("."))
        return c.fate

    assert fate("rejected", "preference_rejected") == (
        "rejected by the preference check (preference_rejected: why)"
    )
    assert fate("rejected", "shape_error") == "rejected by the critic (shape_error: why)"
    assert fate("rejected", "llm_error") == "no usable code (llm_error: why)"
    assert fate("failed", "timeout") == "training failed (timeout: why)"
    assert fate("designed") == "designed; not checked yet"


def test_sparkline() -> None:
    assert sparkline([0, 1, 2, 3, 4, 5, 6, 7]) == "▁▂▃▄▅▆▇█"
    assert sparkline([2, None, 2]) == "▁ ▁"
    assert sparkline([]) == ""


# Missing, partial, damaged and newer runs: one clear line and exit code 1, never a traceback.


def test_a_missing_run_is_a_clear_error(tmp_path: Path) -> None:
    for command in ("show", "inspect", "replay", "report", "export"):
        code, out = invoke(command, "nope", "--runs-dir", tmp_path)
        assert code == 1 and f"no run in {tmp_path} has an id starting with 'nope'" in flat(out)
    code, out = invoke("show", tmp_path / "not-there", "--runs-dir", tmp_path)
    assert code == 1 and "does not exist" in flat(out)
    code, out = invoke("show", tmp_path, "--runs-dir", tmp_path)
    assert code == 1 and "is not a rewardsmith run (no run.json)" in flat(out)


def test_newer_damaged_and_partial_runs_are_clear_errors(run_dir: Path, tmp_path: Path) -> None:
    newer = copy_run(run_dir, tmp_path / "newer")
    info = json.loads((newer / "run.json").read_text())
    (newer / "run.json").write_text(json.dumps({**info, "schema_version": 99}))
    code, out = invoke("show", newer)
    assert code == 1 and "schema version 99" in flat(out) and "upgrade rewardsmith" in flat(out)

    newer_index = copy_run(run_dir, tmp_path / "newer_index")
    with sqlite3.connect(newer_index / "index.sqlite") as conn:
        conn.execute("PRAGMA user_version = 42")
    code, out = invoke("show", newer_index)
    assert code == 1 and "schema version 42" in flat(out)

    damaged = copy_run(run_dir, tmp_path / "damaged")
    (damaged / "round_00" / "summary_a0.json").write_text("{not json")
    code, out = invoke("show", damaged)
    assert code == 1 and "summary_a0.json is not valid JSON" in flat(out) and "damaged" in flat(out)

    partial = copy_run(run_dir, tmp_path / "partial")
    (partial / "index.sqlite").unlink()
    code, out = invoke("show", partial)
    assert code == 1 and "no index.sqlite" in flat(out) and "incomplete" in flat(out)
    assert not (partial / "index.sqlite").exists()  # looking never creates anything


def test_a_run_stopped_mid_round_shows_what_there_is(run_dir: Path, tmp_path: Path) -> None:
    stopped = copy_run(run_dir, tmp_path / "stopped")
    (stopped / "round_01" / "summary_a0.json").unlink()
    for path in (stopped / "evaluation").rglob("*"):
        if path.is_file():
            path.unlink()
    code, out = invoke("show", stopped)
    assert code == 0, out
    assert "selection has not run for this round" in flat(out)
    code, out = invoke("replay", stopped)
    assert code == 0 and "round 1 (2 of 2)" in flat(out)
    code, out = invoke("report", stopped, "--out", tmp_path / "report")
    assert code == 0 and (tmp_path / "report" / "report.html").is_file()
    assert not (tmp_path / "report" / "evaluation.png").exists()
    assert "no final evaluation" in (tmp_path / "report" / "report.html").read_text()


def test_show_says_why_a_score_of_equal_human_and_sparse_rewards_has_no_value(
    run_dir: Path, tmp_path: Path
) -> None:
    # A success task at its ceiling (drawer-close: best, human and sparse all 1.0): the score
    # divides by human - sparse = 0.
    ceiling = copy_run(run_dir, tmp_path / "ceiling")
    evaluation = read_record(ceiling / "evaluation" / "evaluation.json")
    for arm in ("best", "human", "sparse"):
        evaluation[arm]["fitness"] = 1.0
    evaluation["human_normalized_score"] = None
    write_record(ceiling / "evaluation" / "evaluation.json", evaluation)
    code, out = invoke("show", ceiling)
    assert code == 0, out
    assert (
        "best 1, human 1, sparse 1; human-normalised score undefined: the human and the sparse "
        "reward both scored 1 on the fresh seeds, so compare the best with the human reward "
        "directly" in flat(out)
    )
