"""Meta-World 3.1.1 draws its benchmark's 50 goal variations anew for every environment it makes.

`gym.make("Meta-World/MT1", env_name=..., seed=0)` builds `MT1(env_name, seed)`, whose
`_make_tasks` resets a throwaway copy of the task 50 times to draw the goals: about 0.5 CPU-s,
four times what a whole 500-step episode costs. A training program makes one environment per
learner, one per checkpoint episode (5 at each of 10 checkpoints) and the evaluator ten, so a
Meta-World training spent more time drawing the same goals again than evaluating its policy.

With a seed, the draw is a pure function of the task and the seed (numpy's global generator is
seeded for it and restored afterwards), and its result is a list of immutable `Task` tuples that
environments only read. So the first draw is kept for the rest of the process and handed out as
a fresh list; a draw without a seed is left to Meta-World.
"""

from __future__ import annotations

import functools
import threading
from typing import Any

import metaworld

_LOCK = threading.Lock()


def share_goal_draws() -> None:
    """Install the shared draw in place of `metaworld._make_tasks` (once per process)."""
    if getattr(metaworld._make_tasks, "shared_draws", None) is not None:
        return
    draw = metaworld._make_tasks
    shared: dict[str, list[Any]] = {}

    def make_tasks(
        classes: Any, args_kwargs: Any, kwargs_override: Any, seed: int | None = None
    ) -> list[Any]:
        if seed is None:
            return list(draw(classes, args_kwargs, kwargs_override, seed=seed))
        # Everything the draw depends on, as text: the task classes and arguments are module
        # constants whose repr names them, and the goal count is a module global.
        key = repr((list(classes.items()), args_kwargs, kwargs_override, seed, metaworld._N_GOALS))
        with _LOCK:
            if key not in shared:
                shared[key] = draw(classes, args_kwargs, kwargs_override, seed=seed)
            return list(shared[key])

    functools.update_wrapper(make_tasks, draw)  # `__wrapped__` is Meta-World's own draw
    make_tasks.shared_draws = shared  # type: ignore[attr-defined]
    metaworld._make_tasks = make_tasks
