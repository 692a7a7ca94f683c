"""`replay --rerun`: re-execute a recorded run with no LLM, check prompt hashes, compare fitness."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from jinja2 import FileSystemLoader
from typer.testing import CliRunner

import rewardsmith.prompts
from rewardsmith.cli import app
from rewardsmith.eureka_loop.llm import LLMUnavailableError
from rewardsmith.eureka_loop.replay_designer import (
    ReplayDesigner,
    ReplayDivergedError,
    ReplayLLM,
    compare_prompts,
)
from rewardsmith.eureka_loop.runner import resume_run
from rewardsmith.runs.layout import REPLAY
from rewardsmith.runs.schema import read_record
from rewardsmith.runs.store import RunStore
from tests.llm_fixtures import block_remote_network
from tests.runs.recorded import recorded_run

pytestmark = pytest.mark.slow

runner = CliRunner()
EDIT = "Prefer smooth rewards over sparse bonuses."


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return recorded_run(tmp_path_factory)


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    block_remote_network(monkeypatch)  # a rerun must not need any LLM


def _rerun(*args: str | Path) -> tuple[int, str, dict[str, Any]]:
    result = runner.invoke(app, ["replay", *map(str, args), "--rerun"])
    assert "Traceback" not in result.output, result.output
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    runs_dir = Path(args[args.index("--runs-dir") + 1])
    (rerun_dir,) = [p for p in runs_dir.iterdir() if (p / "run.json").exists()]
    return result.exit_code, result.output, read_record(rerun_dir / REPLAY)


def test_rerun_reproduces_every_prompt_hash_and_fitness(run_dir: Path, tmp_path: Path) -> None:
    code, out, report = _rerun(run_dir, "--runs-dir", tmp_path)
    assert code == 0, out
    assert "prompts: all 4 hash the same as the recorded ones" in out
    assert report["prompts_reproduced"] and len(report["prompts"]) == 4
    assert {p["key"] for p in report["prompts"]} == {
        f"r{r:02d}-design-r{r:02d}c{i:02d}" for r in (0, 1) for i in (0, 1)
    }
    # Same machine, same seed, same library versions: training is deterministic, so every
    # candidate's fate and fitness, and the final evaluation, come out the same.
    assert [c["key"] for c in report["candidates"]] == ["r00c00", "r00c01", "r01c00", "r01c01"]
    assert all(c["same"] for c in report["candidates"]), report["candidates"]
    assert report["evaluation"] and all(
        e["old"] == pytest.approx(e["new"]) for e in report["evaluation"].values()
    )
    assert report["reproduced"] and "reproduced:" in out

    rerun_dir = Path(report["rerun"])
    info = read_record(rerun_dir / "run.json")
    assert info["status"] == "finished" and info["replay_of"] == str(run_dir)
    assert info["model"] == "replay of openai/scripted"
    with RunStore(tmp_path).open_run(rerun_dir) as rerun:
        assert rerun.llm_calls() == []  # nothing was paid for
    assert sorted(p.name for p in (rerun_dir / "llm").iterdir()) == sorted(
        p.name for p in (run_dir / "llm").iterdir()
    )  # the rerun keeps the replies it used, so it can be inspected on its own
    with pytest.raises(ValueError, match="is a rerun of"):
        resume_run(rerun_dir, tmp_path)


def test_an_edited_template_is_reported_where_it_differs(
    run_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    templates = Path(shutil.copytree(Path(rewardsmith.prompts.__file__).parent, tmp_path / "t"))
    task = templates / "designer_task.j2"
    task.write_text(EDIT + "\n" + task.read_text())
    edited = rewardsmith.prompts.environment().overlay(loader=FileSystemLoader(templates))
    monkeypatch.setattr(rewardsmith.prompts, "environment", lambda: edited)

    runs_dir = tmp_path / "runs"
    code, out, report = _rerun(run_dir, "--runs-dir", runs_dir, "--rounds", "1", "--no-evaluate")
    assert code == 1, out
    flat = " ".join(out.split())
    assert "prompts: 2 of 2 differ from the recorded ones" in flat
    assert "r00-design-r00c00, r00-design-r00c01: differs at message 2 (user), line 1" in flat
    assert f"+{EDIT}" in out and "not reproduced" in flat
    assert not report["prompts_reproduced"]
    assert {p["where"] for p in report["prompts"]} == {"message 2 (user), line 1"}
    # Only round 0 was asked for, and the recorded replies were still served.
    assert [c["key"] for c in report["candidates"]] == ["r00c00", "r00c01"]
    assert all(c["same"] for c in report["candidates"])
    assert report["evaluation"] == {}


def test_compare_prompts_says_where_they_differ() -> None:
    old = [{"role": "system", "content": "a"}, {"role": "user", "content": "x\ny\nz"}]
    recorded = {"messages": old, "prompt_hash": compare_prompts("k", None, old).replayed_hash}
    assert compare_prompts("k", recorded, old).matches
    changed = compare_prompts("k", recorded, [old[0], {"role": "user", "content": "x\nY\nz"}])
    assert not changed.matches and changed.where == "message 2 (user), line 2"
    assert "-y" in changed.diff and "+Y" in changed.diff
    shorter = compare_prompts("k", recorded, old[:1])
    assert shorter.where == "the recorded prompt has 2 messages, the rebuilt one 1"
    assert compare_prompts("k", None, old).where == "the source run recorded no prompt for it"


def test_a_reply_the_source_never_recorded_stops_the_rerun(run_dir: Path, tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    with store.open_run(run_dir) as source, store.create_run("cartpole", {}, [], 0) as fresh:
        designer = ReplayDesigner(source)
        ctx = SimpleNamespace(run=fresh, budget=None)
        messages = read_record(run_dir / "round_00" / "cand_00" / "prompt.json")["messages"]
        (proposal,) = designer.propose(ctx, {}, messages, ["r00-design-r00c00"])
        assert proposal.reply == (run_dir / "round_00" / "cand_00" / "response.md").read_text()
        assert designer.checks[-1].matches
        with pytest.raises(ReplayDivergedError, match="has no reply for r05-design-r05c00"):
            designer.propose(ctx, {}, messages, ["r05-design-r05c00"])
        llm = ReplayLLM(source, designer.record)
        with pytest.raises(LLMUnavailableError):
            llm.complete([{"role": "user", "content": "a prompt nobody sent"}])
        assert designer.checks[-1].where == "the source run recorded no such prompt"
    assert json.loads((run_dir / "run.json").read_text())["status"] == "finished"
