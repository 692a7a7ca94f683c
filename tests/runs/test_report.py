"""`rewardsmith report`: the HTML page and PNGs, opened in a real headless browser."""

from __future__ import annotations

import io
import os
import re
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from rewardsmith.cli import app
from rewardsmith.runs import layout
from rewardsmith.runs.views import open_view
from tests.browser import CHROMIUM, run_chromium
from tests.runs.recorded import copy_run, recorded_run

pytestmark = pytest.mark.slow

runner = CliRunner()
FIGURES = ("fitness", "candidates", "components", "evaluation")
# Appended to a copy of the page: records, once the page has loaded, how many images it has and
# how many of them decoded to a real picture.
IMAGE_PROBE = """<script>
window.addEventListener("load", () => {
  const images = Array.from(document.images);
  const loaded = images.filter((img) => img.complete && img.naturalWidth > 0);
  document.body.setAttribute("data-images", images.length + "/" + loaded.length);
});
</script>"""
ARTIFACTS = Path(
    os.environ.get("REWARDSMITH_TEST_ARTIFACTS", Path(__file__).parents[2] / "test-artifacts")
)


@pytest.fixture(scope="module")
def report_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run_dir = recorded_run(tmp_path_factory)
    out = tmp_path_factory.mktemp("report")
    result = runner.invoke(app, ["report", str(run_dir), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    assert "report.html" in result.output
    return out


def test_report_writes_a_self_contained_page_and_the_pngs(report_dir: Path) -> None:
    page = (report_dir / "report.html").read_text()
    for name in FIGURES:
        png = (report_dir / f"{name}.png").read_bytes()
        assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 5_000
    assert page.count('src="data:image/png;base64,') == len(FIGURES)
    # Self-contained: nothing is fetched from anywhere, not even a relative file.
    assert not re.search(r'(src|href)="(?!data:)', page)
    for heading in (
        "Best fitness per round",
        "Every candidate&#x27;s fitness",
        "The best reward&#x27;s components over training",
        "Final evaluation",
        "Rounds",
        "Best reward: r0",
    ):
        assert heading in page, heading
    assert "human-normalised score" in page
    code = page[page.index("<div class='code'>") :]
    assert "compute_reward" in code and '<span style="color' in code  # highlighted, inline styles


@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium: apt-get install -y chromium")
def test_report_renders_in_headless_chromium_with_every_image(
    report_dir: Path, tmp_path: Path
) -> None:
    assert CHROMIUM is not None
    probe = report_dir / "probe.html"
    probe.write_text(
        (report_dir / "report.html").read_text().replace("</body>", IMAGE_PROBE + "</body>")
    )
    dom = run_chromium(
        tmp_path / "profile-dom", "--virtual-time-budget=10000", "--dump-dom", probe.as_uri()
    )
    assert f'data-images="{len(FIGURES)}/{len(FIGURES)}"' in dom.stdout, dom.stdout[-2000:]
    probe.unlink()

    screenshot = tmp_path / "report.png"
    run_chromium(
        tmp_path / "profile-shot",
        "--window-size=1100,6000",
        f"--screenshot={screenshot}",
        (report_dir / "report.html").as_uri(),
    )
    assert screenshot.read_bytes().startswith(b"\x89PNG") and screenshot.stat().st_size > 50_000
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / ".gitignore").write_text("*\n")  # artifacts are never committed
    shutil.copyfile(screenshot, ARTIFACTS / "report_screenshot.png")


# Reward-sourced text: a component name that is broken mathtext, one that matplotlib's legend
# would hide (a leading underscore), and bidi overrides and terminal escapes (Trojan Source).
MATHTEXT = "$\\frac{$"
HOSTILE = "evil\u202e\u2066\x1b[2J\x9b\x07"
ESCAPED = "evil\\u202e\\u2066\\x1b[2J\\x9b\\x07"
RAW = ("\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2069", "\x1b", "\x9b", "\x07")


def test_report_shows_reward_text_literally(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    """Issue 30: a component named `$\\frac{$` made `rewardsmith report` exit 1 (mathtext), and
    bidi overrides and escapes from the reward reached the page raw."""
    run_dir = copy_run(recorded_run(tmp_path_factory), tmp_path / "runs")
    best = open_view(run_dir, tmp_path / "runs").best
    assert best is not None
    outcome = best.files.outcome()
    assert outcome is not None
    for checkpoint in outcome["checkpoints"]:
        checkpoint["components"].update({MATHTEXT: 1.0, "_hidden": 2.0, HOSTILE: 3.0})
    best.files.write_outcome(outcome)
    code = best.files.text(layout.REWARD)
    assert code is not None
    best.files.write(layout.REWARD, code + f"# {HOSTILE}\n")
    reflection = best.files.text(layout.REFLECTION) or ""
    best.files.write(layout.REFLECTION, reflection + f"\n{HOSTILE}\n")

    out = tmp_path / "report"
    result = runner.invoke(app, ["report", str(run_dir), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert (out / "components.png").read_bytes().startswith(b"\x89PNG")
    page = (out / "report.html").read_text()
    for char in RAW:
        assert char not in page, repr(char)
    code_block = page[page.index("<div class='code'>") :]
    assert "\\u202e" in code_block and "\\x1b" in code_block
    assert page.count(ESCAPED) >= 2  # the reflection and the code


def test_component_names_are_the_legend_as_written() -> None:
    """Every name in the legend, literally: mathtext off, escapes visible, `_hidden` kept."""
    from rewardsmith.runs import report

    components = {MATHTEXT: 1.0, "_hidden": 2.0, HOSTILE: 3.0}
    checkpoints = [{"step": s, "fitness": 1.0, "components": components} for s in (1, 2)]
    view = SimpleNamespace(best=SimpleNamespace(key="r0c0", checkpoints=lambda: checkpoints))
    with report._literal_text():
        drawn = report._components(view)  # type: ignore[arg-type]
        assert not isinstance(drawn, str)
        drawn[0].savefig(io.BytesIO(), format="png")
    legend = drawn[0].axes[0].get_legend()
    assert sorted(t.get_text() for t in legend.get_texts()) == sorted(
        [MATHTEXT, "_hidden", ESCAPED]
    )
