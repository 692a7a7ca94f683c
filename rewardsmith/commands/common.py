"""Shared CLI plumbing: consoles, option types, and turning library errors into clear messages."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.text import Text

from rewardsmith.choices import Algo, Backend, SandboxChoice
from rewardsmith.commands.text import untrusted
from rewardsmith.eureka_loop.config import SANDBOX_ENV, config_help
from rewardsmith.runs.versus_human import undefined_score_text

console = Console(log_path=False)
err_console = Console(stderr=True)

TaskFileOption = Annotated[
    Path | None,
    typer.Option(
        "--task-file",
        help="A TOML task file for any installed Gymnasium env (see docs/task_files.md).",
        exists=True,
        dir_okay=False,
    ),
]
# Options `run` shares with other commands: their help is the run config's (declared once).
BackendOption = Annotated[Backend, typer.Option("--backend", help=config_help("backend"))]
SandboxOption = Annotated[
    SandboxChoice,
    typer.Option("--sandbox", envvar=SANDBOX_ENV, help=config_help("sandbox")),
]
AlgoOption = Annotated[Algo | None, typer.Option("--algo", help=config_help("algo"))]
AddressOption = Annotated[str | None, typer.Option("--address", help=config_help("address"))]
RunsDirOption = Annotated[
    Path,
    typer.Option("--runs-dir", envvar="REWARDSMITH_RUNS_DIR", help="Where runs are stored."),
]
RunArgument = Annotated[
    str, typer.Argument(help="Run id, a unique prefix of it, or the path of a run directory.")
]
JsonOption = Annotated[
    bool, typer.Option("--json", help="Print one JSON object instead of tables.")
]


def fail(message: str, hint: str | None = None, code: int = 1) -> NoReturn:
    """Print one clear error line (and a hint) and exit; never a traceback.

    Both are plain text: they often carry a reward's own error message (see `text.py`). Neither
    is wrapped (`soft_wrap`): a log or a pipe gets Rich's 80 columns, and an error split over
    lines there is harder to grep; a terminal wraps long lines itself.
    """
    err_console.print(
        Text.assemble(("error:", "bold red"), " ", untrusted(message)),
        highlight=False,
        soft_wrap=True,
    )
    if hint:
        err_console.print(untrusted(hint, "dim"), highlight=False, soft_wrap=True)
    raise typer.Exit(code)


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn the library's expected errors into one-line messages."""
    from rewardsmith.envs.registry import TaskNotFoundError
    from rewardsmith.reward.errors import RewardError

    try:
        yield
    except TaskNotFoundError as exc:
        fail(str(exc.args[0] if exc.args else exc))
    except RewardError as exc:
        fail(str(exc))
    except (FileNotFoundError, ValueError) as exc:
        fail(str(exc))


def print_json(data: Any) -> None:
    """`--json` output: bare JSON on stdout, past the console so nothing wraps or adds markup;
    paths and other non-JSON values are written as strings."""
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")


def fmt(value: float | None, spec: str = ".4g", missing: str = "-") -> str:
    """A number as every command prints one; `missing` stands for a value there is none of."""
    return missing if value is None else format(value, spec)


def score_text(
    score: float | None, human: float | None, sparse: float | None, spec: str, missing: str = "-"
) -> str:
    """The human-normalised score as `fmt` prints it, or, where it has no value because the human
    and the sparse reward scored the same, why (`undefined_score_text`)."""
    if score is None:
        return undefined_score_text(human, sparse) or missing
    return format(score, spec)
