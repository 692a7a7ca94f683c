"""`rewardsmith video`: a run without videos gets one filmed on demand, copied with --out (never
over an existing file without --force), and a target without a policy fails clearly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rewardsmith.cli import app
from rewardsmith.eureka_loop.runner import start_run
from rewardsmith.eureka_loop.state import LoopConfig
from rewardsmith.sandbox.video_file import check_video

runner = CliRunner()
# Both tests share a run trained in the module's fixture (a real loop run, then filming).
pytestmark = pytest.mark.slow


def invoke(*args: str | Path) -> tuple[int, str]:
    result = runner.invoke(app, [str(a) for a in args])
    return result.exit_code, " ".join(result.output.split())


@pytest.fixture(scope="module")
def unfilmed_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    runs = tmp_path_factory.mktemp("runs")
    config = LoopConfig(
        task_id="cartpole", rounds=1, samples=2, steps=2048, evaluate=False, videos="none"
    )
    return Path(start_run(config, runs)["run_dir"])


def test_the_best_is_filmed_on_demand_and_copied_with_out(
    unfilmed_run: Path, tmp_path: Path
) -> None:
    assert not list(unfilmed_run.rglob("rollout.mp4"))
    code, out = invoke("video", unfilmed_run.name, "--runs-dir", unfilmed_run.parent, "--json")
    assert code == 0, out
    filmed = json.loads(out)
    assert Path(filmed["video"]).parent.name.startswith("cand_")
    assert check_video(Path(filmed["video"]), 8 << 20) is None

    copy = tmp_path / "best.mp4"
    code, out = invoke("video", unfilmed_run.name, "--runs-dir", unfilmed_run.parent, "-o", copy)
    assert code == 0 and copy.read_bytes() == Path(filmed["video"]).read_bytes()
    copy.write_bytes(b"mine")
    code, out = invoke("video", unfilmed_run.name, "--runs-dir", unfilmed_run.parent, "-o", copy)
    assert code == 1 and "exists" in out and "--force" in out
    assert copy.read_bytes() == b"mine"  # never overwritten unasked


def test_a_target_without_a_policy_or_unknown_fails_clearly(unfilmed_run: Path) -> None:
    code, out = invoke(
        "video", unfilmed_run.name, "evaluation/human", "--runs-dir", unfilmed_run.parent
    )
    assert code == 1 and "no trained policy" in out
    code, out = invoke(
        "video", unfilmed_run.name, "evaluation/best2", "--runs-dir", unfilmed_run.parent
    )
    assert code == 1 and "choose one of best, human, sparse" in out
