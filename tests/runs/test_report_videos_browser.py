"""The report's rollout videos in a real browser: a loop run filmed with `--videos best`, its
report opened in headless Chromium, and every inlined MP4 (H.264 in an MP4 container, as a
`data:` URL) loaded, decoded and drawn; `canPlayType` alone is not trusted, since a browser
built without the proprietary codecs can still parse the container's size and duration."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rewardsmith.choices import SandboxChoice, Videos
from rewardsmith.eureka_loop.runner import start_run
from rewardsmith.eureka_loop.state import LoopConfig
from rewardsmith.runs.report import write_report
from rewardsmith.runs.store import RunStore
from rewardsmith.runs.views import load_view
from tests.judging.chromium import AVAILABLE, WHY_NOT, start_chrome

H264 = 'video/mp4; codecs="avc1.42E01E"'
# Appended to a copy of the page: once every video has its metadata, each is sought to 1 s (half
# its length if shorter), the decoded frame is drawn on a canvas, and what the browser saw is
# written, as JSON, to the body's data-videos attribute for --dump-dom to show. `seeked` can fire
# before a loaded machine's Chromium has the sought frame ready to draw (a black canvas, once in
# four suites on 2026-12-07), so a black drawing is drawn again, every 0.1 s for up to 10 s: a
# browser that cannot decode the codec still draws nothing.
VIDEO_PROBE = """<script>
function probe(video) {
  return new Promise((resolve) => {
    const fail = () => resolve({error: video.error ? video.error.code : -1});
    video.addEventListener("error", fail, {once: true});
    const seek = () => {
      const draw = (tries) => {
        const canvas = document.createElement("canvas");
        canvas.width = video.videoWidth;
        canvas.height = video.videoHeight;
        const context = canvas.getContext("2d");
        context.drawImage(video, 0, 0);
        const pixels = context.getImageData(0, 0, canvas.width, canvas.height).data;
        let lit = 0, sum = 0, sumSq = 0;
        for (let i = 0; i < pixels.length; i += 4) {
          const grey = (pixels[i] + pixels[i + 1] + pixels[i + 2]) / 3;
          lit += grey > 0 ? 1 : 0;
          sum += grey;
          sumSq += grey * grey;
        }
        if (lit === 0 && tries < 100) {
          setTimeout(() => draw(tries + 1), 100);
          return;
        }
        const n = pixels.length / 4, mean = sum / n;
        resolve({
          readyState: video.readyState,
          duration: video.duration,
          videoWidth: video.videoWidth,
          videoHeight: video.videoHeight,
          currentTime: video.currentTime,
          litFraction: lit / n,
          std: Math.sqrt(Math.max(0, sumSq / n - mean * mean)),
          draws: tries + 1,
        });
      };
      video.addEventListener("seeked", () => draw(0), {once: true});
      video.currentTime = Math.min(1, video.duration / 2);
    };
    if (video.readyState >= 1) seek();
    else video.addEventListener("loadedmetadata", seek, {once: true});
    if (video.error) fail();
  });
}
window.addEventListener("load", async () => {
  const videos = Array.from(document.querySelectorAll("video"));
  const h264 = document.createElement("video").canPlayType('__H264__');
  let results;
  try {
    results = await Promise.all(videos.map(probe));
  } catch (e) {
    results = [{error: String(e)}];
  }
  document.body.setAttribute("data-videos", JSON.stringify({h264, results}));
});
</script>""".replace("__H264__", H264)


@pytest.fixture(scope="module")
def filmed_report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    """A one-round CartPole run filmed with `--videos best`, and its report; the page and how
    many videos the run holds."""
    runs = tmp_path_factory.mktemp("runs")
    config = LoopConfig(
        task_id="cartpole",
        rounds=1,
        samples=2,
        steps=2048,
        eval_seeds=1,
        sandbox=SandboxChoice.PROCESS,
        videos=Videos.BEST,
    )
    run_dir = Path(start_run(config, runs)["run_dir"])
    filmed = len(list(run_dir.rglob("rollout.mp4")))
    # The round's best and the final evaluation's first seeds: best, human and sparse (the human
    # arm is the best's own folder where the best is the human reward, so 3 or 4 videos).
    assert filmed >= 3
    page, _ = write_report(load_view(RunStore(runs).open_run(run_dir)), run_dir / "report")
    return page, filmed


def probe_videos(page: Path, profile: Path) -> dict[str, Any]:
    """What headless Chromium saw of each `<video>` of `page` (see VIDEO_PROBE).

    The wait is in wall-clock time through WebDriver: under `--virtual-time-budget` a loaded
    machine (the suite's two workers at the end of CI) can run out of budget before the media
    pipeline has decoded every video."""
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    probe = page.with_name("probe.html")
    probe.write_text(page.read_text().replace("</body>", VIDEO_PROBE + "</body>"))
    driver = start_chrome(profile)
    try:
        driver.get(probe.as_uri())
        body = driver.find_element(By.TAG_NAME, "body")
        try:
            found = WebDriverWait(driver, 120).until(lambda _: body.get_attribute("data-videos"))
        except TimeoutException:
            raise AssertionError(
                "the probe never finished: " + driver.page_source[-1000:]
            ) from None
    finally:
        driver.quit()
        probe.unlink()
    seen: dict[str, Any] = json.loads(found)
    return seen


@pytest.mark.slow
@pytest.mark.skipif(not AVAILABLE, reason=WHY_NOT)
def test_every_rollout_video_in_the_report_plays_in_headlessrun_chromium(
    filmed_report: tuple[Path, int], tmp_path: Path
) -> None:
    page, filmed = filmed_report
    assert page.read_text().count("<video ") == filmed

    seen = probe_videos(page, tmp_path / "profile")

    assert seen["h264"] == "probably"  # Debian's chromium is built with H.264
    assert len(seen["results"]) == filmed
    for video in seen["results"]:
        assert "error" not in video, video
        assert video["readyState"] >= 2 and video["duration"] > 0, video  # a frame is decoded
        assert (video["videoWidth"], video["videoHeight"]) == (300, 200), video  # CartPole
        assert video["currentTime"] > 0, video
        # The decoded frame is CartPole's scene (a white background, the cart and pole), not
        # black: a browser that parsed the container but could not decode would draw nothing.
        assert video["litFraction"] > 0.9 and video["std"] > 5, video
