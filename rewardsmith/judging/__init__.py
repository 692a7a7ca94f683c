"""The human in the loop: a person compares a round's rollout videos two at a time.

`pairs` chooses the next pair, `scores` fits Bradley-Terry scores to the choices, `server` is the
page (Starlette on 127.0.0.1, token and CSRF checked). The choices and the written feedback are
run-store files (`rewardsmith.runs.judgements`), which the loop's designer reads. Orchestrator-side
and trusted; only the CLI and the loop import it.
"""
