"""A live terminal view of a run: the round, each candidate's state, best so far, and spend."""

from __future__ import annotations

import threading
from typing import Any

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from rewardsmith.commands.text import untrusted
from rewardsmith.eureka_loop.evaluation import EVAL_NAMES, EvalKey
from rewardsmith.runs.candidate import CandidateKey

_STYLES = {
    "designed": "cyan",
    "accepted": "cyan",
    "rejected": "red",
    "training": "yellow",
    "trained": "green",
    "failed": "red",
}


def _row_order(key: CandidateKey | EvalKey) -> tuple[int, int, int]:
    """The final evaluation's rows first, by arm and seed, then the candidates in key order."""
    if isinstance(key, EvalKey):
        return (-1, EVAL_NAMES.index(key.arm), key.seed_index)
    return (key.round, key.idx, 0)


class LiveReporter:
    """Implements the loop's Reporter with a rich Live display; safe to call from worker threads."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.lock = threading.Lock()
        self.round = 0
        self.attempt = 0
        self.rows: dict[CandidateKey | EvalKey, dict[str, Any]] = {}
        self.best_text = "-"
        self.spend_text = "0 tokens"
        self.live = Live(
            get_renderable=self.render, console=console, refresh_per_second=4, transient=False
        )
        self.drawing = False
        self.start_lock = threading.Lock()  # not `lock`: starting draws, and drawing takes `lock`

    def __enter__(self) -> LiveReporter:
        return self

    def __exit__(self, *exc: object) -> None:
        with self.start_lock:
            if not self.drawing:
                return
            self.live.stop()
        if not self.console.is_terminal:
            # rich ends the last frame with a newline only on a terminal; piped to a file or
            # `tee`, what is printed next would continue the frame's last line.
            self.console.line()

    def draw(self) -> None:
        """Start drawing at the run's first round or candidate, so that an error before it (an
        unknown task, a missing suite) is printed alone, not under an empty table."""
        with self.start_lock:
            if not self.drawing:
                self.live.start()
                self.drawing = True

    def render(self) -> Group:
        """The frame `Live` redraws from its own thread: the header, and the rows of the current
        round and of the final evaluation."""
        with self.lock:
            header = Text.assemble(
                ("round ", "bold"),
                f"{self.round}" + (f" (retry {self.attempt})" if self.attempt else ""),
                ("   best ", "bold"),
                self.best_text,
                ("   spend ", "bold"),
                self.spend_text,
            )
            table = Table(show_header=True, header_style="bold", expand=False)
            table.add_column("candidate")
            table.add_column("state")
            table.add_column("detail", overflow="fold", max_width=90)
            for key in sorted(self.rows, key=_row_order):
                if isinstance(key, CandidateKey) and key.round != self.round:
                    continue
                row = self.rows[key]
                table.add_row(
                    key.label,
                    Text(row["status"], style=_STYLES.get(row["status"], "")),
                    untrusted(row["detail"]),  # an error message from reward code: plain text
                )
            return Group(header, table)

    def round_started(self, round: int, attempt: int) -> None:
        """Switch the table to `round`; the rows of earlier rounds are no longer drawn."""
        self.draw()
        with self.lock:
            self.round, self.attempt = round, attempt

    def candidate(self, key: CandidateKey | EvalKey, status: str, detail: str = "") -> None:
        """Update the candidate's row; a final state (rejected, trained, failed) is also logged
        above the table, so it stays on screen after the round is over."""
        self.draw()
        with self.lock:
            self.rows[key] = {"status": status, "detail": detail}
        if status in ("rejected", "trained", "failed"):
            self.console.log(untrusted(f"{key.label} {status}" + (f": {detail}" if detail else "")))

    def progress(self, key: CandidateKey | EvalKey, done: int, total: int) -> None:
        """Draw the row as a 20-cell bar of steps done, full once `done` reaches `total`."""
        bar_width = 20
        filled = int(bar_width * min(done, total) / max(total, 1))
        self.draw()
        with self.lock:
            self.rows[key] = {
                "status": "training",
                "detail": f"{'█' * filled}{'░' * (bar_width - filled)} {done:,}/{total:,} steps",
            }

    def best(self, summary: dict[str, Any]) -> None:
        """Show the new best (`{"key", "fitness"}`, a trained candidate's) in the header."""
        with self.lock:
            fitness = summary["fitness"]
            shown = "unknown" if fitness is None else f"{fitness:.4g}"
            self.best_text = f"{summary['key']} fitness {shown}"

    def spend(self, tokens: int, usd: float) -> None:
        """Show the spend so far in the header (a running total, in tokens and dollars)."""
        with self.lock:
            self.spend_text = f"{tokens:,} tokens, ${usd:.4f}"

    def message(self, text: str) -> None:
        """Log a note above the table as plain text, never markup."""
        self.console.log(untrusted(text))
