"""What a hostile sandboxed process leaves in the one directory it may write.

Standard library only, so the same code runs three ways: imported by a test, as a fake worker
program inside a real sandbox (`python -m cProfile hostile.py DIR PLANTS [SLEEP_S]`, see
`Impostor`), and from inside a reward that reached `builtins.exec` (`as_reward`). Whoever wrote
the directory, the orchestrator must survive what it finds there.

A plant is `[name, kind, arg]`: `symlink` (to the path `arg`), `fifo`, `text` (`arg` verbatim), `hex`
(the bytes `arg` spells),
`big` (`arg` repeated, one per line, to 100 MB).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from typing import Any

BIG_BYTES = 100 * 1024 * 1024


def plant(directory: str, name: str, kind: str, arg: str = "") -> None:
    """Put `kind` at `directory/name`, replacing whatever the name held."""
    path = os.path.join(directory, name)
    if os.path.lexists(path):
        os.unlink(path)
    if kind == "symlink":
        os.symlink(arg, path)
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "text":
        with open(path, "w") as handle:
            handle.write(arg)
    elif kind == "hex":
        with open(path, "wb") as handle:
            handle.write(bytes.fromhex(arg))
    elif kind == "big":
        line = (arg + "\n").encode()
        block = line * max(1, (1 << 20) // len(line))
        with open(path, "wb") as handle:
            for _ in range(BIG_BYTES // len(block) + 1):
                handle.write(block)
    else:
        raise ValueError(f"unknown plant kind {kind!r}")


def plant_all(directory: str, plants: list[list[str]]) -> None:
    for name, kind, arg in plants:
        plant(directory, name, kind, arg)


def main(argv: list[str]) -> int:
    """DIR PLANTS_JSON [SLEEP_S]: plant, then stay alive like a worker still training."""
    plant_all(argv[0], json.loads(argv[1]))
    print(f"planted {argv[1]}", flush=True)
    if len(argv) > 2:
        time.sleep(float(argv[2]))
    return 0


def as_reward(plants: list[list[str]], preamble: str) -> str:
    """A reward that runs this module's code from its first call, in its working directory.

    `preamble` must bind `imp` to `importlib.import_module` (the tests' ESCAPE): reward code
    cannot `import os` or call `exec`, and reaches both the way a determined reward would.
    """
    with open(__file__) as handle:
        source = handle.read().split("\n\ndef main(")[0]
    return (
        preamble
        + f"SOURCE = {source!r}\nPLANTS = {plants!r}\nplanted = []\n\n\n"
        + "def compute_reward(state, action, next_state):\n"
        + "    if not planted:\n"
        + "        planted.append(True)\n"
        + "        scope = {}\n"
        + "        getattr(imp('builtins'), 'ex' + 'ec')(SOURCE, scope)\n"
        + "        scope['plant_all']('.', PLANTS)\n"
        + "    one = np.ones(len(action))\n"
        + "    return one, {'alive': one}\n"
    )


class Impostor:
    """A sandbox that runs this module, in the real sandbox, in place of the named programs.

    `fakes` maps a module (`rewardsmith.programs.train_sb3`, `...smoke`) to its plants and how long
    the fake then stays alive; other modules run for real. The fake gets the same writable
    directory, limits and polling as the real program, so the test exercises the orchestrator
    exactly as a compromised worker would.
    """

    def __init__(self, inner: Any, fakes: dict[str, tuple[list[list[str]], float]], home: Any):
        self.inner, self.fakes = inner, fakes
        self.name = inner.name
        os.makedirs(home, exist_ok=True)
        self.script = os.path.join(home, "hostile.py")
        shutil.copyfile(__file__, self.script)
        os.chmod(home, 0o755)
        os.chmod(self.script, 0o644)

    def run(
        self,
        module: str,
        args: list[str],
        writable: list[Any],
        limits: Any,
        on_poll: Any = None,
        readable: Any = None,
    ) -> Any:
        if module not in self.fakes:
            return self.inner.run(module, args, writable, limits, on_poll, readable)
        plants, sleep_s = self.fakes[module]
        fake_args = [
            "-o",
            "/dev/null",
            self.script,
            str(writable[0]),
            json.dumps(plants),
            str(sleep_s),
        ]
        seen = [*(readable or []), type(writable[0])(os.path.dirname(self.script))]
        return self.inner.run("cProfile", fake_args, writable, limits, on_poll, seen)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
