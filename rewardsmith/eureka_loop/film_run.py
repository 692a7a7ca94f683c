"""Film a policy of a recorded run on demand (`rewardsmith video`): a candidate of the search, or
an arm of the final evaluation, whatever `--videos` the run had. The policy is the one its
training left (`job/`); the job is rebuilt as it trained, and the video program runs in the
run's own sandbox choice."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rewardsmith.eureka_loop.evaluation import EVAL_NAMES, EVAL_SEED_BASE
from rewardsmith.eureka_loop.offline import OfflineDesigner
from rewardsmith.eureka_loop.reporter import NullReporter
from rewardsmith.eureka_loop.state import LoopConfig, search_seed
from rewardsmith.job_spec import POLICY_FILE
from rewardsmith.runs.candidate import CandidateKey, TrainingFiles
from rewardsmith.runs.layout import VIDEO_NOTE
from rewardsmith.runs.store import RunStore

ARM_PREFIX = "evaluation/"


@dataclass(frozen=True)
class Filmed:
    """A run's folder and its video, or why it has none."""

    label: str
    folder: TrainingFiles
    video: Path | None
    reason: str | None = None


def target_folder(
    store: RunStore, run_ref: str, target: str | None
) -> tuple[str, TrainingFiles, int]:
    """The folder `target` names (a candidate key, `evaluation/ARM`, or None: the run's best),
    with the seed its policy trained on."""
    run = store.open_run(run_ref)
    config = LoopConfig.from_dict(run.info()["config"])
    if target is not None and target.startswith(ARM_PREFIX):
        arm = target[len(ARM_PREFIX) :]
        if arm not in EVAL_NAMES:
            raise ValueError(
                f"no final evaluation arm {arm!r}; choose one of {', '.join(EVAL_NAMES)}"
            )
        return target, run.evaluation_arm(arm, 0), EVAL_SEED_BASE + config.seed
    if target is None:
        target = (run.info().get("summary") or {}).get("best_candidate")
        if not target:
            raise ValueError(f"run {run.run_id} has no best candidate yet; name one (r00c01)")
    key = CandidateKey.parse(target)
    return target, run.candidate(key), search_seed(config, key)


def film_target(runs_dir: Path, run_ref: str, target: str | None) -> Filmed:
    """The target's video: the one kept, else filmed now from the policy its training left."""
    from rewardsmith.eureka_loop.runner import open_context
    from rewardsmith.eureka_loop.videos import film

    store = RunStore(runs_dir.resolve())
    label, folder, seed = target_folder(store, run_ref, target)
    if folder.video() is not None:
        return Filmed(label, folder, folder.video())
    if not (folder.job_dir / POLICY_FILE).is_file():
        return Filmed(label, folder, None, f"{label} has no trained policy to film")
    run = store.open_run(run_ref)
    config = LoopConfig.from_dict(run.info()["config"])
    ctx = open_context(run, config, NullReporter(), replay=(OfflineDesigner(), None))
    (folder.path / VIDEO_NOTE).unlink(missing_ok=True)  # asked for again: film again
    film(ctx, folder, seed, force=True)  # whatever `--videos` the run had
    note = folder.video_note() or {}
    return Filmed(label, folder, folder.video(), note.get("reason"))
