"""The judging page's screenshot in docs/inspecting_runs.md (docs/images/judging_page.png).

Makes a real two-round CartPole run (offline designer, short budgets, every candidate filmed),
stores one choice between round 1's two candidates, opens round 1's judging page (its two
candidates and round 0's best, the anchor between rounds) on 127.0.0.1, and photographs it in
headless Chromium (selenium and Debian's chromium-driver) with both videos paused one second in
(or half-way, in a shorter one) and some feedback typed. No network beyond 127.0.0.1; about two
minutes on two cores.

Run: `python benchmarks/judging_page_screenshot.py [--out FILE]`.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rewardsmith.choices import SandboxChoice, Videos  # noqa: E402
from rewardsmith.eureka_loop.runner import start_run  # noqa: E402
from rewardsmith.eureka_loop.state import LoopConfig  # noqa: E402
from rewardsmith.judging.prepare import open_session  # noqa: E402
from rewardsmith.judging.server import JudgingServer  # noqa: E402
from tests.judging.chromium import AVAILABLE, WHY_NOT, start_chrome, wait_for_videos  # noqa: E402

OUT = ROOT / "docs" / "images" / "judging_page.png"
WIDTH = 1280
STEPS = 16_384  # enough for policies that balance a while: videos of a few seconds
FEEDBACK = "Reward keeping the cart near the centre of the track, not only the pole upright."
PAUSE_AT = """
for (const v of document.querySelectorAll('video')) {
  v.pause(); v.currentTime = Math.min(1.0, v.duration / 2);
}
"""
SEEKED = """
return Array.from(document.querySelectorAll('video')).every(v => !v.seeking && v.readyState >= 2);
"""


def filmed_run(runs: Path) -> Path:
    """A two-round CartPole run whose candidates were all filmed; its directory."""
    config = LoopConfig(
        task_id="cartpole",
        rounds=2,
        samples=2,
        steps=STEPS,
        evaluate=False,
        videos=Videos.ALL,
        sandbox=SandboxChoice.PROCESS,
    )
    return Path(start_run(config, runs)["run_dir"])


def photograph(url: str, out: Path, profile: Path) -> None:
    """Load the page, pause both videos one second in, type feedback, save the whole page."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    driver = start_chrome(profile, (WIDTH, 900))
    try:
        driver.get(url)
        wait_for_videos(driver)
        driver.execute_script(PAUSE_AT)
        WebDriverWait(driver, 20).until(lambda d: d.execute_script(SEEKED))
        driver.find_element(By.ID, "feedback").send_keys(FEEDBACK)
        height = driver.execute_script("return document.documentElement.scrollHeight")
        metrics = {"width": WIDTH, "height": height, "deviceScaleFactor": 1, "mobile": False}
        driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)  # the whole page
        out.parent.mkdir(parents=True, exist_ok=True)
        if not driver.save_screenshot(str(out)):
            raise RuntimeError(f"Chromium could not write {out}")
    finally:
        driver.quit()


def main() -> None:
    """Make the run, open round 1's page, and write the screenshot."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT, help="Where the PNG goes.")
    args = parser.parse_args()
    if not AVAILABLE:
        sys.exit(WHY_NOT)
    with tempfile.TemporaryDirectory() as scratch:
        runs = Path(scratch) / "runs"
        run_dir = filmed_run(runs)
        session = open_session(runs, str(run_dir), 1, film=False)
        new = [c.key for c in session.contestants if not (c.is_incumbent or c.is_anchor)]
        session.files.append(new[0], new[1], "left")
        with JudgingServer(session) as server:
            photograph(server.url, args.out, Path(scratch) / "profile")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
