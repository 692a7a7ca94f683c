"""Start or resume an evolution run: build the context, run the graph, summarise the result."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rewardsmith.choices import Backend, ExecutorChoice, Judge
from rewardsmith.envs import load_task
from rewardsmith.envs.task_copy import copy_task
from rewardsmith.eureka_loop.designer import Designer, LLMDesigner
from rewardsmith.eureka_loop.graph import build_graph
from rewardsmith.eureka_loop.no_result import NothingTrainedError, explain
from rewardsmith.eureka_loop.offline import OfflineDesigner
from rewardsmith.eureka_loop.plan import plan_message
from rewardsmith.eureka_loop.reporter import NullReporter, Reporter
from rewardsmith.eureka_loop.state import CandidateKey, Context, LoopConfig, LoopState
from rewardsmith.runs.layout import STATES, TASK_COPY, VIDEO
from rewardsmith.runs.loop_time import loop_time
from rewardsmith.runs.store import Run, RunStore

if TYPE_CHECKING:
    from rewardsmith.eureka_loop.llm import Budget, ChatModel

JUDGE_TEMPERATURE = 0.0  # a verdict, not a design: the same stills should get the same answer
NO_JUDGE_MODEL = (
    "--judge vlm needs a vision model: pass --judge-model MODEL (a litellm vision model, e.g. "
    "gpt-4o or openai/... with --api-base), or --model to judge with the designer's model"
)


def check_judge(config: LoopConfig, in_process: ChatModel | None = None) -> None:
    """Refuse, before anything runs, `--judge vlm` with no model to judge with; and a judge
    model whose provider key is missing."""
    if config.judge != Judge.VLM:
        return
    if not (config.judge_model or config.model or in_process is not None):
        raise ValueError(NO_JUDGE_MODEL)
    if config.judge_model:
        from rewardsmith.eureka_loop.llm import LLMClient, LLMConfig

        LLMClient(LLMConfig(model=config.judge_model, api_base=config.api_base))


def judge_client(
    config: LoopConfig, budget: Budget, in_process: ChatModel | None
) -> ChatModel | None:
    """The video judge's model (`--judge-model`, else the designer's), sharing the run's budget;
    None when the judge is off or there is no model to judge with (a rerun of recorded replies)."""
    if config.judge != Judge.VLM:
        return None
    if config.judge_model is None and in_process is not None:
        return in_process
    name = config.judge_model or config.model
    if not name:
        return None
    from rewardsmith.eureka_loop.llm import LLMClient, LLMConfig

    settings = LLMConfig(model=name, api_base=config.api_base, temperature=JUDGE_TEMPERATURE)
    return LLMClient(settings, budget=budget)


def open_context(
    run: Run,
    config: LoopConfig,
    reporter: Reporter,
    replay: tuple[Designer, Any] | None = None,
    model: ChatModel | None = None,
) -> Context:
    """The live objects for `run`'s nodes: the task, the designer (or replayed replies), the
    sandbox, the LLM clients and budget, the smoke-test states and the trajectory bank."""
    from rewardsmith.eureka_loop.bank import bank_for, seed_bank
    from rewardsmith.eureka_loop.llm import Budget, LLMCall, LLMClient, LLMConfig
    from rewardsmith.jobs.smoke import record_states
    from rewardsmith.sandbox.backends import choose_sandbox

    task_file = run.path / TASK_COPY if config.task_file else None
    adapter = load_task(config.task_id, task_file)
    budget = Budget(config.max_usd, config.max_tokens)
    llm = None
    designer: Designer = OfflineDesigner()
    if replay is not None:  # `replay --rerun`: recorded replies stand in for the LLM
        designer, llm = replay
    elif model is not None:  # an in-process model (the fast test tier's scripted one)
        llm, designer = model, LLMDesigner(config.model or "in-process model")
    elif config.model:
        llm = LLMClient(
            LLMConfig(model=config.model, api_base=config.api_base, temperature=config.temperature),
            budget=budget,
        )
        designer = LLMDesigner(config.model)
    judge_llm = judge_client(config, budget, model) if replay is None else None
    # Replies already stored count against the budget, so a resumed run keeps its limits.
    for row in run.llm_calls():
        budget.record(
            LLMCall(
                prompt_hash=row["prompt_hash"],
                model=row["model"],
                messages=[],
                prompt_tokens=row["prompt_tokens"] or 0,
                completion_tokens=row["completion_tokens"] or 0,
                cost_usd=row["cost_usd"] or 0.0,
                cost_known=bool(row["cost_usd"]),
            )
        )
    chosen = choose_sandbox(config.sandbox, run_id=run.run_id)  # labels its containers
    reporter.message(f"designer: {designer.name}; sandbox: {chosen.describe()}")
    if chosen.sandbox.name == "docker":  # on start and resume: orphans of dead runs go
        from rewardsmith.sandbox.docker_backend import sweep_message

        if swept := sweep_message():
            reporter.message(swept)
    executor = None
    if config.executor != ExecutorChoice.LOCAL:
        from rewardsmith.cluster.executors import make_executor

        executor = make_executor(config.executor, config.address, chosen.sandbox)
        reporter.message(
            f"executor: {config.executor} ({config.address or 'RAY_ADDRESS or local'})"
        )
    states_path = run.path / STATES
    if not states_path.exists():
        record_states(adapter, states_path, seed=config.seed)
    # The trajectory bank for the preference check and the analyzer (no reward code runs here).
    seed_bank(adapter, bank_for(run.path), config.seed, reporter.message)
    return Context(
        run=run,
        adapter=adapter,
        config=config,
        designer=designer,
        sandbox=chosen.sandbox,
        reporter=reporter,
        states_path=states_path,
        llm=llm,
        budget=budget,
        executor=executor,
        judge_llm=judge_llm,
    )


def _recursion_limit(config: LoopConfig) -> int:
    return 20 + 8 * config.rounds * (config.round_retries + 1)


def _execute(
    run: Run,
    config: LoopConfig,
    reporter: Reporter,
    initial: LoopState | None,
    replay: tuple[Designer, Any] | None = None,
    model: ChatModel | None = None,
) -> dict[str, Any]:
    ctx = open_context(run, config, reporter, replay, model)
    reporter.message(plan_message(config, ctx.adapter))  # not for `evaluate`: it trains no round
    graph = build_graph(run.checkpoint_db_path)
    graph_config = {
        "configurable": {"thread_id": run.run_id},
        "recursion_limit": _recursion_limit(config),
    }
    try:
        final = graph.invoke(initial, graph_config, context=ctx)
    except KeyboardInterrupt:
        ctx.cancel.set()
        run.set_status("interrupted")
        raise
    except Exception as exc:
        ctx.cancel.set()
        run.set_status("failed", error=f"{type(exc).__name__}: {exc}")
        raise
    if not final.get("best"):  # nothing trained: no result, and the user must hear why
        message = explain(
            run.run_id,
            run.candidates(),
            final.get("stop_reason"),
            config,
            ctx.adapter.reward_source("human") is not None,
        )
        run.set_status("failed", error=message, stop_reason=final.get("stop_reason"))
        raise NothingTrainedError(message)
    result = summarize(run, final, ctx)
    run.set_status("finished", stop_reason=final.get("stop_reason"))
    return result


def summarize(run: Run, final: LoopState, ctx: Context) -> dict[str, Any]:
    """The result a finished run returns (the CLI's table or `--json`); it also writes the run's
    final token and dollar totals into its summary."""
    best = final.get("best")
    evaluation = final.get("evaluation") or {}
    summary = run.info().get("summary", {})
    totals = run.totals()
    result = {
        "run_id": run.run_id,
        "run_dir": str(run.path),
        "task": ctx.adapter.id,
        "designer": ctx.designer.name,
        "stop_reason": final.get("stop_reason"),
        "best_candidate": summary.get("best_candidate"),
        "best_fitness": summary.get("best_fitness") if best else None,  # as selection compared it
        "best_fitness_std": summary.get("best_fitness_std") if best else None,
        "best_fitness_seeds": summary.get("best_fitness_seeds", 1) if best else None,
        "held_up": evaluation.get("held_up"),
        "best_reward_path": summary.get("best_reward_path"),
        "human_fitness": (evaluation.get("human") or {}).get("fitness"),
        "sparse_fitness": (evaluation.get("sparse") or {}).get("fitness"),
        "evaluated_best_fitness": (evaluation.get("best") or {}).get("fitness"),
        "human_normalized_score": evaluation.get("human_normalized_score"),
        "versus_human": evaluation.get("versus_human"),
        "best_is_env_reward": bool(evaluation.get("best_is_env_reward")),
        "best_is_human_reward": bool(evaluation.get("best_is_human_reward")),
        "evaluation_note": evaluation.get("note"),
        "history": final.get("history", []),
        "tokens": totals.get("tokens", 0),
        "cost_usd": totals.get("cost_usd", 0.0),
        "llm_calls": totals.get("calls", 0),
        "preference": summary.get("preference"),
        "reward_hacking_suspects": summary.get("reward_hacking_suspects", []),
        "videos": sorted(str(p) for p in run.path.rglob(VIDEO)),
        "loop_time": loop_time(run.node_times()),
    }
    run.update_summary(tokens=result["tokens"], cost_usd=result["cost_usd"])
    return result


def fresh_state() -> LoopState:
    """The graph's state before round 0."""
    return {"round": 0, "attempt": 0, "candidates": [], "best": None, "history": []}


def start_run(
    config: LoopConfig,
    runs_dir: Path,
    reporter: Reporter | None = None,
    command: list[str] | None = None,
    model: ChatModel | None = None,
) -> dict[str, Any]:
    """Create a run in `runs_dir` and evolve rewards until a stop condition.

    `model` answers the LLM calls in this process instead of `config.model` through litellm
    (`config.model` then only names it); a resume uses `config.model` again."""
    reporter = reporter or NullReporter()
    # Fail fast, before a run directory exists, on a bad task or a model without credentials.
    adapter = load_task(config.task_id, config.task_file)
    adapter.reward_source("human")  # a reward file the task file names must exist
    adapter.reward_source("sparse")
    if config.model and model is None:
        from rewardsmith.eureka_loop.llm import LLMClient, LLMConfig

        LLMClient(LLMConfig(model=config.model, api_base=config.api_base))
    check_judge(config, model)
    run = RunStore(runs_dir.resolve()).create_run(
        adapter.id,
        config.to_dict(),
        command or sys.argv,
        config.seed,  # a task file's own id
    )
    if config.task_file:  # the run keeps its task: evaluate, resume and rerun use this copy
        copy_task(Path(config.task_file), run.path)
    reporter.message(f"run {run.run_id} in {run.path}")
    return _execute(run, config, reporter, fresh_state(), model=model)


def resume_run(
    run_ref: str | Path,
    runs_dir: Path,
    reporter: Reporter | None = None,
    executor: tuple[str, str | None] | None = None,
) -> dict[str, Any]:
    """Continue an interrupted run from its last checkpoint; stored replies are reused.

    `executor` (name, address) moves the rest of the run, e.g. onto a Ray cluster."""
    reporter = reporter or NullReporter()
    run = RunStore(runs_dir.resolve()).open_run(run_ref)
    info = run.info()
    if info.get("replay_of"):
        raise ValueError(
            f"run {run.run_id} is a rerun of {info['replay_of']}; rerun that again instead of resuming"
        )
    config = LoopConfig.from_dict(info["config"])
    if executor is not None:
        config.executor, config.address = ExecutorChoice(executor[0]), executor[1]
    graph = build_graph(run.checkpoint_db_path)
    snapshot = graph.get_state({"configurable": {"thread_id": run.run_id}})
    # A node that finished just before a kill has its writes saved but no checkpoint after it:
    # `next` is then empty (nothing left to run in that step), yet its task is still there.
    if snapshot.values and not snapshot.next and not snapshot.tasks:
        raise ValueError(f"run {run.run_id} already finished; nothing to resume")
    run.set_status("running")
    reporter.message(f"resuming run {run.run_id}")
    initial = None if snapshot.values else fresh_state()
    return _execute(run, config, reporter, initial)


def replay_run(
    run: Run,
    config: LoopConfig,
    designer: Designer,
    llm: Any = None,
    reporter: Reporter | None = None,
) -> dict[str, Any]:
    """Evolve in a fresh `run` with `designer` (and `llm`) serving another run's recorded replies."""
    reporter = reporter or NullReporter()
    reporter.message(f"rerun {run.run_id} in {run.path}")
    return _execute(run, config, reporter, fresh_state(), (designer, llm))


def evaluate_run(
    run_ref: str | Path,
    runs_dir: Path,
    seeds: int | None = None,
    reporter: Reporter | None = None,
    backend: str | None = None,
    executor: tuple[str, str | None] | None = None,
) -> dict[str, Any]:
    """Re-evaluate a run's best reward against the human and sparse rewards; no LLM is needed."""
    from rewardsmith.eureka_loop.evaluation import evaluate_best

    reporter = reporter or NullReporter()
    run = RunStore(runs_dir.resolve()).open_run(run_ref)
    info = run.info()
    best = info.get("summary", {}).get("best_candidate")
    if not best:
        raise ValueError(f"run {run.run_id} has no trained candidate to evaluate yet")
    config = LoopConfig.from_dict(info["config"])
    if executor is not None:
        config.executor, config.address = ExecutorChoice(executor[0]), executor[1]
    if seeds is not None:
        config.eval_seeds = seeds
    if backend is not None:  # e.g. the best reward of an SB3 run, retrained on the JAX task
        from rewardsmith.rl.jax import check_backend

        check_backend(backend, config.task_id, bool(config.task_file))
        config.backend = Backend(backend)
    ctx = open_context(run, config, reporter, replay=(OfflineDesigner(), None))
    report = evaluate_best(ctx, CandidateKey.parse(best))
    return {"run_id": run.run_id, "best_candidate": best, **report}
