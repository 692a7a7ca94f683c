"""How the loop tells the outside world what it is doing (the CLI shows it live)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from rewardsmith.eureka_loop.evaluation import EvalKey
    from rewardsmith.runs.candidate import CandidateKey


class Reporter(Protocol):
    """What the loop calls as it goes. Calls come from its worker threads too, and must not raise:
    a reporter only shows what happened, the run store is what records it."""

    def round_started(self, round: int, attempt: int) -> None:
        """A round's design begins; `attempt` counts its retries (0 for the first try)."""
        ...

    def candidate(self, key: CandidateKey | EvalKey, status: str, detail: str = "") -> None:
        """A candidate changed state (designed, accepted, rejected, training, trained, failed);
        an `EvalKey` is a training of the final evaluation. `detail` may quote the reward code's
        own error: it is untrusted text."""
        ...

    def progress(self, key: CandidateKey | EvalKey, done: int, total: int) -> None:
        """Environment steps trained so far of the job's total; `done` may pass `total`."""
        ...

    def best(self, summary: dict[str, Any]) -> None:
        """A new best so far: `{"key": "r01c02", "fitness": ...}`."""
        ...

    def spend(self, tokens: int, usd: float) -> None:
        """The run's LLM spend so far, in total (not since the last call)."""
        ...

    def message(self, text: str) -> None:
        """A one-off note (budget reached, a skipped step, where the run lives)."""
        ...


class NullReporter:
    """Reports nothing; for tests and `--json`."""

    def round_started(self, round: int, attempt: int) -> None:
        """Ignored; the round's prompt is still written to the run."""
        pass

    def candidate(self, key: CandidateKey | EvalKey, status: str, detail: str = "") -> None:
        """Ignored; the candidate's state is still written to the run's index."""
        pass

    def progress(self, key: CandidateKey | EvalKey, done: int, total: int) -> None:
        """Ignored; the trainer checks for cancellation before it calls this, not here."""
        pass

    def best(self, summary: dict[str, Any]) -> None:
        """Ignored; the best is still written to the run summary."""
        pass

    def spend(self, tokens: int, usd: float) -> None:
        """Ignored; the budget still counts the spend and stops the run at its limit."""
        pass

    def message(self, text: str) -> None:
        """Ignored; notes are for a person watching, nothing depends on them."""
        pass
