"""Every name in a run directory, in one place: its folders, records, logs and round files.

A run directory (`<runs-dir>/YYYYmmdd-HHMMSS-<task>-<4 hex>/`):

    run.json                      the run's config and summary (`Run.info`)
    state.sqlite                  LangGraph's checkpointer (the graph state, for `resume`)
    index.sqlite                  candidates and LLM calls, for listings and costs
    llm/                          each reply, saved under its key before it is used
    states.npz                    random-policy transitions the critic's smoke test replays
    bank/bank.npz, bank.json      the trajectory bank the preference check scores
    task.toml, *_reward.py        the run's own copy of its task file (task-file runs)
    feedback_next.md              feedback for the next round (`rewardsmith feedback`)
    replay.json                   a rerun's comparison with the run it reran
    report/report.html, *.png     `rewardsmith report`'s page and figures
    evaluation/evaluation.json    the final evaluation; each arm trains in `evaluation/<arm>_sS/`
    round_RR/                     a round: its prompts, summaries and analyses per attempt
        prompt_aA.json, summary_aA.json, analysis_aA.json
        judgements.jsonl, feedback.md, judging_done.json, human_feedback.md   (`--judge human`)
        cand_II/                  a candidate (the files below)

A candidate folder (files appear as the candidate gets through the loop):

    prompt.json, response.md     what the designer was asked and replied
    genome.json                  the offline designer's genome (offline runs)
    reward.py                    the extracted reward code
    critique.json                the critic's verdict (plus critic_review.md with an LLM critic)
    preference.json              the preference check's bank scores and verdict
    preference_feedback.md       what a rejection tells the designer
    rung_R.json, rung_R_state/   halving schedule: each rung's outcome and the state it left
    outcome.json                 the training outcome (fitness, checkpoints, steps)
    analysis.json, reflection.md the analyzer's facts and the feedback for the next round
    rollout.mp4, video.json      the rollout video (`--videos`, or for the judge) and its note
    keyframes.npz                evenly spaced stills of that video (checked copies)
    judge.json                   the video judge's verdict (`--judge vlm`)
    worker.log, evaluator.log, tracer.log, logs/<program>.log   what each program printed
    job/, eval/, confirm/, smoke/, preference/, trace/, video/  the sandboxed programs' folders
    job/tensorboard/PPO_1/       the SB3 learner's TensorBoard log (also under confirm/, finals/)

The files *inside* a program's folder are named by `rewardsmith.job_spec`, which the programs
themselves import (they may not import the run store). No other module spells a name listed here;
`tests/runs/test_layout.py` greps the package for them.
"""

from __future__ import annotations

import re
from pathlib import Path

from rewardsmith.job_spec import TENSORBOARD_DIR

# --- the run ---
RUN_INFO = "run.json"
CHECKPOINT_DB = "state.sqlite"
INDEX_DB = "index.sqlite"
LLM_DIR = "llm"
STATES = "states.npz"
BANK_DIR = "bank"
BANK_ARRAYS = "bank.npz"
BANK_META = "bank.json"
TASK_COPY = "task.toml"
REWARD_COPIES = {"human_reward": "human_reward.py", "sparse_reward": "sparse_reward.py"}
"""A task file's reward files, copied beside the run's copy of it under these names."""
PENDING_FEEDBACK = "feedback_next.md"
REPLAY = "replay.json"
EVALUATION_DIR = "evaluation"
EVALUATION_REPORT = "evaluation.json"
FINALS_REPORT = "finals.json"  # the finals' seeds and winner (`eureka_loop/finals.py`)
REPORT_DIR = "report"  # where `rewardsmith report` writes unless told otherwise
REPORT_PAGE = "report.html"  # in the folder `rewardsmith report` writes to

# --- a round (`round_RR/`) ---
ROUND_PROMPT = "prompt"  # round_RR/prompt_aA.json: the attempt's design prompt
ROUND_SUMMARY = "summary"  # round_RR/summary_aA.json: its selection
ROUND_ANALYSIS = "analysis"  # round_RR/analysis_aA.json: its analysis
JUDGEMENTS = "judgements.jsonl"
ROUND_FEEDBACK = "feedback.md"
JUDGING_DONE = "judging_done.json"
DESIGN_FEEDBACK = "human_feedback.md"

# --- a candidate (`round_RR/cand_II/`) or a final evaluation arm ---
REWARD = "reward.py"
RESPONSE = "response.md"
PROMPT = "prompt.json"
GENOME = "genome.json"
CRITIQUE = "critique.json"
CRITIC_REVIEW = "critic_review.md"
PREFERENCE = "preference.json"
PREFERENCE_FEEDBACK = "preference_feedback.md"
OUTCOME = "outcome.json"
ANALYSIS = "analysis.json"
REFLECTION = "reflection.md"
VIDEO = "rollout.mp4"  # one rendered episode of the trained policy (`--videos`)
VIDEO_NOTE = "video.json"  # frames filmed, or why there is no video
KEYFRAMES = "keyframes.npz"  # stills of the video, for the judge (`frames`, `seconds`)
JUDGE = "judge.json"  # the video judge's verdict (`--judge vlm`)

# The sandboxed programs' folders, and what each printed.
JOB_DIR = "job"  # the training worker
EVAL_DIR = "eval"  # the reward-free evaluator
CONFIRM_DIR = "confirm"  # a would-be best's second training seed (`--confirm-best`)
FINALS_DIR = "finals"  # a finalist's extra training seeds, `finals/sJ/` (`--finalists`)
SMOKE_DIR = "smoke"  # the critic's smoke test
PREFERENCE_DIR = "preference"  # the preference check's bank scoring
TRACE_DIR = "trace"  # the JAX backend's trace of the reward
VIDEO_DIR = "video"  # the video program
TRACE_STATES = "trace_states.npz"  # the transitions the JAX trace replays (in the candidate)
WORKER_LOG = "worker.log"
EVALUATOR_LOG = "evaluator.log"
TRACER_LOG = "tracer.log"
LOGS_DIR = "logs"  # the check programs' logs, `logs/<program>.log`

_ROUND_FILE = re.compile(r"round_(\d+)/([a-z]+)_a(\d+)\.json")


def round_file(stem: str, attempt: int) -> str:
    """`prompt_a0.json`: the round file `stem` (ROUND_PROMPT, ...) of an attempt at a round."""
    return f"{stem}_a{attempt}.json"


def round_files(run_dir: Path, stem: str) -> dict[tuple[int, int], Path]:
    """Every `round_RR/<stem>_aA.json` of a run, by (round, attempt)."""
    found = {}
    for path in Path(run_dir).glob(f"round_*/{stem}_a*.json"):
        match = _ROUND_FILE.fullmatch(f"{path.parent.name}/{path.name}")
        if match and match[2] == stem:
            found[(int(match[1]), int(match[3]))] = path
    return found


def rung_file(index: int) -> str:
    """The file that keeps halving rung `index`'s outcome."""
    return f"rung_{index}.json"


def rung_state_dir(index: int) -> str:
    """The folder in which halving rung `index` leaves what the next rung continues from."""
    return f"rung_{index}_state"


def program_log(work_dir: Path, program: str) -> Path:
    """Where check program `program` (smoke, score, trace, video) working in `work_dir` (a
    candidate's `smoke/`, ...) logs: `logs/<program>.log` beside that folder, never inside what
    the program may write, and kept when the folder is removed once its record is read."""
    return work_dir.parent / LOGS_DIR / f"{program}.log"


def tensorboard_logs(run_dir: Path) -> list[Path]:
    """Every training's TensorBoard log in a run (`<job folder>/tensorboard/PPO_1/`): the SB3
    learner keeps one where the `tensorboard` package is installed; the JAX learner none."""
    events = Path(run_dir).glob(f"**/{TENSORBOARD_DIR}/*/events.out.tfevents.*")
    return sorted({event.parent for event in events})
