"""Every case of docs BAD_REWARDS.md (2-24) ends in its named category, on every backend we have.

Static cases (2-5) never start a sandbox. Smoke cases (6-12) run `smoke_test` and training cases
(13-24) run `train_reward` on CartPole with tiny budgets. The contract's checks (6-14) are made by
the sandboxed programs themselves, the same code whatever confines them, so they run on the
process backend; the attacks on confinement (15-24, the other rlimits, a forged score) run through
every backend: the process backend with and without bubblewrap and, where an engine and the
worker image are ready, Docker. Reward code cannot import `os` (the static check
refuses it, and `typing.sys` too), so the hostile rewards here reach it the way a determined one
would, through strings the static check cannot follow: the sandbox, not the static check, is what
has to hold.
"""

from __future__ import annotations

import hashlib
import os
import resource
import shutil
import socket
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import rewardsmith
from rewardsmith.jobs.smoke import SmokeReport, smoke_test
from rewardsmith.reward.errors import ErrorCategory, RewardError
from rewardsmith.reward.static import check_source
from rewardsmith.sandbox.docker_backend import DockerSandbox, docker_status
from rewardsmith.sandbox.executor import ProcessSandbox
from rewardsmith.sandbox.types import Limits, Sandbox
from tests.sandbox.bad_reward_kit import (
    CANARY,
    ESCAPE,
    LIMITS,
    MODULES,
    OK_RETURN,
    TIMEOUT_LIMITS,
    expect,
    reward,
    train,
)

E = ErrorCategory


def job_processes(job_dir: Path) -> list[int]:
    """Host processes still running for this job (none may survive a kill)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if str(job_dir).encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


@pytest.fixture
def contract_sandbox() -> Sandbox:
    """Where the contract's checks run: the checks are the programs' own code on every backend."""
    return ProcessSandbox()


# --- 2-5: static checks, before any sandbox -----------------------------------------------------


def test_02_syntax_error_names_line_and_column() -> None:
    with pytest.raises(RewardError) as info:
        check_source(
            "import numpy as np\n\ndef compute_reward(state, action, next_state)\n    return 1\n"
        )
    assert info.value.category == E.SYNTAX_ERROR
    assert info.value.line == 3 and info.value.column is not None


@pytest.mark.parametrize(
    "source",
    [
        "import numpy as np\n\ndef reward(state, action, next_state):\n    pass\n",
        reward(OK_RETURN) + "\n\ndef compute_reward(state, action, next_state):\n    pass\n",
    ],
    ids=["missing", "twice"],
)
def test_03_compute_reward_missing_or_twice(source: str) -> None:
    with pytest.raises(RewardError) as info:
        check_source(source)
    assert info.value.category == E.SIGNATURE_ERROR


@pytest.mark.parametrize(
    "signature",
    ["state, action", "state, action, next_state, info", "state, action, next_state, *rest"],
    ids=["missing", "extra", "varargs"],
)
def test_04_wrong_parameters(signature: str) -> None:
    source = f"import numpy as np\n\ndef compute_reward({signature}):\n    pass\n"
    with pytest.raises(RewardError) as info:
        check_source(source)
    assert info.value.category == E.SIGNATURE_ERROR


@pytest.mark.parametrize("module", ["os", "subprocess", "socket"])
def test_05_forbidden_import(module: str) -> None:
    with pytest.raises(RewardError) as info:
        check_source(reward(OK_RETURN, f"import numpy as np\nimport {module}\n"))
    assert info.value.category == E.FORBIDDEN_IMPORT and module in info.value.message


# --- 6-12: the smoke test, in the sandbox --------------------------------------------------------


def smoke(
    cartpole: object,
    sandbox: Sandbox,
    states: Path,
    work_dir: Path,
    body: str,
    preamble: str = "import numpy as np\n",
) -> SmokeReport:
    return smoke_test(cartpole, reward(body, preamble), work_dir, states, sandbox, LIMITS)


@pytest.mark.parametrize("value", ["None", "'high'", "1.5"])
@pytest.mark.slow
def test_06_return_type(
    cartpole: object, contract_sandbox: Sandbox, states: Path, tmp_path: Path, value: str
) -> None:
    expect(
        smoke(cartpole, contract_sandbox, states, tmp_path, f"    return {value}\n"),
        E.RETURN_TYPE_ERROR,
    )


@pytest.mark.parametrize(
    "total", ["np.ones((len(action), 1))", "np.float64(1.0)", "np.sum(np.ones(len(action)))"]
)
def test_07_total_shape(
    cartpole: object, contract_sandbox: Sandbox, states: Path, tmp_path: Path, total: str
) -> None:
    error = expect(
        smoke(cartpole, contract_sandbox, states, tmp_path, f"    return {total}, {{}}\n"),
        E.SHAPE_ERROR,
    )
    assert "[64]" in error.message  # expected vs got


@pytest.mark.parametrize(
    ("component", "category"),
    [("1.0", E.DTYPE_ERROR), ("np.ones(3)", E.SHAPE_ERROR)],
    ids=["python-number", "wrong-length"],
)
def test_08_component_shape_or_dtype(
    cartpole: object,
    contract_sandbox: Sandbox,
    states: Path,
    tmp_path: Path,
    component: str,
    category: ErrorCategory,
) -> None:
    body = f"    return np.ones(len(action)), {{'c': {component}}}\n"
    assert (
        expect(smoke(cartpole, contract_sandbox, states, tmp_path, body), category).component == "c"
    )


def test_09_name_error_shows_the_users_frame_only(
    cartpole: object, contract_sandbox: Sandbox, states: Path, tmp_path: Path
) -> None:
    error = expect(
        smoke(cartpole, contract_sandbox, states, tmp_path, "    return undefined_name, {}\n"),
        E.RUNTIME_ERROR,
    )
    assert "NameError" in error.message
    assert error.traceback is not None and "reward.py" in error.traceback
    assert "rewardsmith/" not in error.traceback  # no worker frames


@pytest.mark.parametrize(
    "value",
    ["np.full(len(action), np.nan)", "np.exp(1000.0 + next_state.cart_position)"],
    ids=["nan", "exp-overflow"],
)
def test_10_nonfinite_names_the_component(
    cartpole: object, contract_sandbox: Sandbox, states: Path, tmp_path: Path, value: str
) -> None:
    body = f"""\
    bad = {value}
    return np.zeros(len(action)), {{'upright': np.ones(len(action)), 'bad': bad}}
"""
    error = expect(smoke(cartpole, contract_sandbox, states, tmp_path, body), E.NONFINITE_REWARD)
    assert error.component == "bad"


@pytest.mark.parametrize(
    "noise",
    [
        "np.random.rand(len(action))",
        f"np.full(len(action), {MODULES}['time'].perf_counter())",
    ],
    ids=["random", "clock"],
)
def test_11_nondeterministic_is_a_warning(
    cartpole: object, contract_sandbox: Sandbox, states: Path, tmp_path: Path, noise: str
) -> None:
    body = f"    r = {noise}\n    return r, {{'noise': r}}\n"
    report = smoke(
        cartpole, contract_sandbox, states, tmp_path, body, "import typing\nimport numpy as np\n"
    )
    assert report.ok and report.error is None
    assert any(w.startswith("nondeterministic") for w in report.warnings)


@pytest.mark.slow
def test_12_slow_python_loop_is_too_slow(
    cartpole: object, contract_sandbox: Sandbox, states: Path, tmp_path: Path
) -> None:
    body = (
        "    out = np.zeros(len(action))\n    for i in range(len(action)):\n"
        "        for _ in range(20000):\n            out[i] += 1e-6\n"
        "    return out, {'slow': out}\n"
    )
    report = smoke(cartpole, contract_sandbox, states, tmp_path, body)
    error = expect(report, E.TOO_SLOW)
    assert "calls/s" in error.message and "needs at least" in error.message
    assert report.calls_per_s is None or report.calls_per_s < 50


# --- 13-24: during training ----------------------------------------------------------------------


@pytest.mark.slow
def test_13_raise_at_step_5000_keeps_log_and_checkpoints(
    cartpole: object, contract_sandbox: Sandbox, tmp_path: Path
) -> None:
    # Training calls come one per PPO rollout (32 steps x 8 envs = 256 transitions); the
    # rollout that crosses 5000 is retried row by row, and its first row names the step.
    body = (
        "    if len(action) == 256:\n        seen[0] += 256\n"
        "    if seen[0] >= 5000:\n        raise ValueError('broke at 5000')\n" + OK_RETURN
    )
    outcome = train(
        cartpole,
        contract_sandbox,
        reward(body, "import numpy as np\nseen = [0]\n"),
        tmp_path,
        steps=8000,
    )
    error = expect(outcome, E.RUNTIME_ERROR)
    assert error.step is not None and 5000 - 256 < error.step <= 5000
    assert "broke at 5000" in error.message
    assert [c["step"] for c in outcome.checkpoints][:1] == [4000]  # n_checkpoints=2 of 8000 steps
    assert (tmp_path / "job" / "policy.pt").exists() and (tmp_path / "worker.log").exists()


@pytest.mark.slow
def test_14_rare_nan_stops_training_with_step_and_component(
    cartpole: object, contract_sandbox: Sandbox, tmp_path: Path
) -> None:
    body = (
        "    upright = np.sqrt(0.2 - np.abs(next_state.pole_angle))  # NaN only past 0.2 rad\n"
        "    return upright, {'upright': upright}\n"
    )
    error = expect(
        train(cartpole, contract_sandbox, reward(body), tmp_path, steps=4096), E.NONFINITE_REWARD
    )
    assert error.component == "upright" and error.step is not None and error.step > 8


@pytest.mark.parametrize(
    "body",
    ["    while True:\n        pass\n", f"    {MODULES}['time'].sleep(3600)\n"],
    ids=["15-busy-loop", "16-sleep"],
)
@pytest.mark.slow
def test_15_16_wall_clock_timeout_kills_everything(
    cartpole: object, sandbox: Sandbox, tmp_path: Path, body: str
) -> None:
    began = time.monotonic()
    outcome = train(
        cartpole,
        sandbox,
        reward(body, "import typing\nimport numpy as np\n"),
        tmp_path,
        TIMEOUT_LIMITS,
    )
    expect(outcome, E.TIMEOUT)
    assert time.monotonic() - began < TIMEOUT_LIMITS.wall_s + 10
    assert job_processes(tmp_path / "job") == []


@pytest.mark.parametrize(
    "body",
    [
        "    big = np.ones(50_000_000_000 // 8)\n",
        "    hoard = [np.ones(100_000_000 // 8) for _ in range(500)]\n",
    ],
    ids=["50GB-at-once", "50GB-in-pieces"],
)
@pytest.mark.slow
def test_17_memory_limit(cartpole: object, sandbox: Sandbox, tmp_path: Path, body: str) -> None:
    error = expect(train(cartpole, sandbox, reward(body + OK_RETURN), tmp_path), E.MEMORY_LIMIT)
    assert "2048 MB" in error.message or "MemoryError" in error.message


@pytest.mark.parametrize(
    "body",
    [
        "    fork = imp('os').fork\n    while True:\n        fork()\n",
        "    th = imp('threading')\n    th.stack_size(65536)\n    for _ in range(10000):\n"
        "        th.Thread(target=imp('time').sleep, args=(60,), daemon=True).start()\n",
    ],
    ids=["fork-bomb", "threads"],
)
@pytest.mark.slow
def test_18_process_limit(cartpole: object, sandbox: Sandbox, tmp_path: Path, body: str) -> None:
    expect(train(cartpole, sandbox, reward(body + OK_RETURN, ESCAPE), tmp_path), E.PROCESS_LIMIT)
    assert job_processes(tmp_path / "job") == []


@pytest.mark.slow
def test_18_watchdog_caps_threads_without_cgroup_or_uid(cartpole: object, tmp_path: Path) -> None:
    """The last fallback (root, no cgroup, no uid change): a polling watchdog ends the run."""
    body = (
        "    th = imp('threading')\n    th.stack_size(65536)\n    for _ in range(10000):\n"
        "        th.Thread(target=imp('time').sleep, args=(60,), daemon=True).start()\n"
        "        imp('time').sleep(0.002)\n"
    )
    sandbox = ProcessSandbox(use_cgroup=False, drop_root=False)
    outcome = train(cartpole, sandbox, reward(body + OK_RETURN, ESCAPE), tmp_path)
    expect(outcome, E.PROCESS_LIMIT)


class Listener:
    """A TCP server on 127.0.0.1 that records whatever reaches it."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.server.settimeout(0.2)
        self.port = self.server.getsockname()[1]
        self.received: list[bytes] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.server.accept()
            except OSError:
                continue
            with conn:
                self.received.append(conn.recv(1024) or b"<connected>")

    def close(self) -> None:
        self.stop.set()
        self.thread.join()
        self.server.close()


@pytest.mark.slow
def test_19_socket_is_blocked_and_nothing_is_sent(
    cartpole: object, sandbox: Sandbox, tmp_path: Path
) -> None:
    listener = Listener()
    try:
        body = (
            "    s = imp('socket').create_connection(('127.0.0.1', PORT), timeout=2)\n"
            "    s.sendall(b'stolen')\n" + OK_RETURN
        )
        outcome = train(
            cartpole, sandbox, reward(body, ESCAPE + f"PORT = {listener.port}\n"), tmp_path
        )
    finally:
        listener.close()
    expect(outcome, E.NETWORK_BLOCKED)
    assert listener.received == []


@pytest.mark.slow
def test_19_host_unix_sockets_are_unreachable(
    cartpole: object, sandbox: Sandbox, tmp_path: Path
) -> None:
    """The Docker engine's socket would be root on the host: the worker must not reach it."""
    body = """\
    results = []
    for path in ['/var/run/docker.sock', '/run/docker.sock', '/run/containerd/containerd.sock']:
        s = imp('socket').socket(imp('socket').AF_UNIX)
        try:
            s.connect(path)
            results.append('CONNECTED ' + path)
        except OSError as exc:
            results.append('blocked ' + path + ' ' + str(exc.strerror))
    raise ValueError('; '.join(results))
"""
    error = expect(train(cartpole, sandbox, reward(body, ESCAPE), tmp_path), E.RUNTIME_ERROR)
    assert "CONNECTED" not in error.message and error.message.count("blocked") == 3


@pytest.mark.slow
def test_20_canary_key_never_reaches_the_worker(
    cartpole: object, sandbox: Sandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    monkeypatch.setenv("REWARDSMITH_TEST_TOKEN", CANARY)
    body = """\
    os = imp('os')
    found = [repr(dict(os.environ))]
    try:
        pids = [p for p in os.listdir('/proc') if p.isdigit()]
    except OSError as exc:  # the reward process may not even list /proc
        pids, _ = [], found.append('/proc: ' + str(exc))
    for pid in ['self', str(os.getppid()), '1'] + pids:
        try:
            environ = imp('io').open('/proc/' + pid + '/environ', 'rb').read()
            found.append(environ.decode(errors='replace'))
        except OSError as exc:
            found.append(pid + ': ' + str(exc))
    text = ' '.join(found)
    print(text)
    try:  # the reward process has no writable directory: this fails, but must not leak either
        imp('io').open('leak.txt', 'w').write(text)
    except OSError:
        pass
    raise ValueError(text[:3000])
"""
    outcome = train(cartpole, sandbox, reward(body, ESCAPE), tmp_path)
    error = expect(outcome, E.RUNTIME_ERROR)
    assert "PATH" in error.message  # the reward did read its environment...
    assert CANARY not in str(error.to_dict())  # ...which held no key
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert CANARY.encode() not in path.read_bytes(), path


def checksums(root: Path, skip: Path) -> dict[str, str]:
    return {
        str(p): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.is_relative_to(skip)
    }


@pytest.fixture
def store_root() -> Iterator[Path]:
    """A run store where real ones live: outside /tmp (which the sandbox replaces), mode 0755."""
    root = Path(tempfile.mkdtemp(prefix="rewardsmith-store-", dir="/var/tmp"))
    root.chmod(0o755)
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.mark.slow
def test_21_writes_outside_the_job_dir_are_denied(
    cartpole: object, sandbox: Sandbox, store_root: Path
) -> None:
    tmp_path = store_root
    store = tmp_path / "runs" / "run-1"
    other = store / "round_01" / "cand_00"
    for path, text in {
        store / "run.json": '{"status": "running"}',
        other / "eval" / "evaluation.json": '{"fitness": 42.0}',
        other / "reward.py": "# another candidate",
    }.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    candidate = store / "round_01" / "cand_01"
    package_file = Path(rewardsmith.__file__)
    home_file = Path.home() / f"rewardsmith-escape-{os.getpid()}.txt"
    before = checksums(tmp_path / "runs", skip=candidate)
    package_before = package_file.read_bytes()
    targets = [
        store / "run.json",
        store / "planted.txt",
        other / "eval" / "evaluation.json",
        candidate / "eval" / "evaluation.json",
        home_file,
        package_file,
        Path("/tmp/rewardsmith-escape.txt"),
    ]
    body = (
        "    results = []\n"
        f"    for path in {[str(t) for t in targets]!r}:\n"
        "        try:\n"
        "            imp('io').open(path, 'a').write('{\"fitness\": 1e9}')\n"
        "            results.append('WROTE ' + path)\n"
        "        except OSError as exc:\n"
        "            results.append('denied ' + path + ' ' + str(exc.strerror))\n"
        "    raise ValueError(' | '.join(results))\n"
    )
    error = expect(train(cartpole, sandbox, reward(body, ESCAPE), candidate), E.RUNTIME_ERROR)
    print(error.message)
    host_visible = [t for t in targets if t != Path("/tmp/rewardsmith-escape.txt")]
    for target in host_visible:  # /tmp inside the sandbox is its own empty tmpfs
        assert f"WROTE {target}" not in error.message, error.message
    assert checksums(tmp_path / "runs", skip=candidate) == before
    assert package_file.read_bytes() == package_before
    assert not home_file.exists() and not Path("/tmp/rewardsmith-escape.txt").exists()


@pytest.mark.slow
def test_22_gigabyte_of_output_is_truncated_and_costs_no_memory(
    cartpole: object, sandbox: Sandbox, tmp_path: Path
) -> None:
    body = """\
    line = 'x' * 1_000_000
    for _ in range(1000):
        print(line)
    raise ValueError('done printing')
"""
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    outcome = train(
        cartpole, sandbox, reward(body), tmp_path, Limits(wall_s=60, memory_mb=2048, processes=64)
    )
    rss_growth_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before) / 1024
    expect(outcome, E.RUNTIME_ERROR)
    log = (tmp_path / "worker.log").read_text()
    assert "output truncated" in log
    total = int(log.split("output truncated: ")[1].split(" bytes")[0])
    assert total >= 1_000_000_000
    assert any("output truncated" in w for w in outcome.warnings)
    assert (tmp_path / "worker.log").stat().st_size < 2_000_000
    assert rss_growth_mb < 100, f"the orchestrator grew by {rss_growth_mb:.0f} MB"


@pytest.mark.slow
def test_23_exit_zero_without_result_is_sandbox_died(
    cartpole: object, sandbox: Sandbox, tmp_path: Path
) -> None:
    expect(
        train(cartpole, sandbox, reward("    imp('os')._exit(0)\n", ESCAPE), tmp_path),
        E.SANDBOX_DIED,
    )


@pytest.mark.slow
def test_24_segfault_is_crashed_with_the_signal(
    cartpole: object, sandbox: Sandbox, tmp_path: Path
) -> None:
    began = time.monotonic()
    error = expect(
        train(cartpole, sandbox, reward("    imp('ctypes').string_at(0)\n", ESCAPE), tmp_path),
        E.CRASHED,
    )
    assert "SIGSEGV" in error.message and time.monotonic() - began < 30
    assert error.traceback is not None and "reward.py" in error.traceback  # faulthandler's stack


# --- the other rlimits ----------------------------------------------------------------------------


@pytest.mark.slow
def test_cpu_time_limit(cartpole: object, sandbox: Sandbox, states: Path, tmp_path: Path) -> None:
    limits = Limits(wall_s=30, memory_mb=1024, cpu_s=2)
    report = smoke_test(
        cartpole, reward("    while True:\n        pass\n"), tmp_path, states, sandbox, limits
    )
    assert "CPU-time" in expect(report, E.TIMEOUT).message


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ("    imp('io').open('big.bin', 'wb').write(b'x' * 2_000_000)\n", "File too large"),
        (
            "    keep = [imp('io').open('reward.py') for i in range(500)]\n",
            "Too many open files",
        ),
    ],
    ids=["file-size", "open-files"],
)
def test_file_size_and_open_file_limits(
    cartpole: object, sandbox: Sandbox, states: Path, tmp_path: Path, body: str, says: str
) -> None:
    """The check program seals the disk (`test_sealed_disk.py`), so the big write is refused
    before RLIMIT_FSIZE is reached; opening files to read still meets RLIMIT_NOFILE."""
    limits = Limits(wall_s=30, memory_mb=1024, file_mb=1, open_files=128)
    report = smoke_test(
        cartpole, reward(body + OK_RETURN, ESCAPE), tmp_path, states, sandbox, limits
    )
    message = expect(report, E.RUNTIME_ERROR).message
    assert says in message or ("big.bin" in body and "Permission denied" in message), message


# --- the next candidate still runs; results cannot be forged -----------------------------------


@pytest.mark.slow
def test_good_candidate_runs_after_the_bad_ones(
    cartpole: object, sandbox: Sandbox, tmp_path: Path
) -> None:
    outcome = train(cartpole, sandbox, cartpole.reward_source("human"), tmp_path)  # type: ignore[attr-defined]
    assert outcome.ok, outcome.error
    assert outcome.fitness is not None and outcome.fitness > 0


def test_smoke_passes_a_good_reward(
    cartpole: object, contract_sandbox: Sandbox, states: Path, tmp_path: Path
) -> None:
    source = cartpole.reward_source("human")  # type: ignore[attr-defined]
    report = smoke_test(cartpole, source, tmp_path, states, contract_sandbox, LIMITS)
    assert report.ok and report.error is None and report.warnings == []
    assert report.calls_per_s is not None and report.calls_per_s > 1000


@pytest.mark.slow
def test_a_reward_cannot_forge_its_own_score(
    cartpole: object, sandbox: Sandbox, tmp_path: Path
) -> None:
    """The worker may write anything in its job dir; the fitness still comes from the evaluator."""
    forged = '{"status": "ok", "fitness": 1e9, "steps": 1}'
    body = (
        f"""\
    if not done[0]:
        done[0] = True
        for name in ['result.json', 'evaluation.json', 'metrics.jsonl', '../eval/evaluation.json']:
            try:
                imp('io').open(name, 'w').write({forged!r})
            except OSError:
                pass
"""
        + OK_RETURN
    )
    outcome = train(cartpole, sandbox, reward(body, ESCAPE + "done = [False]\n"), tmp_path)
    assert outcome.ok, outcome.error
    assert outcome.fitness is not None and outcome.fitness <= 500


@pytest.mark.docker
@pytest.mark.slow
def test_docker_and_process_backends_train_to_the_same_fitness(
    cartpole: object, tmp_path: Path
) -> None:
    ready, why = docker_status()
    if not ready:
        pytest.skip(f"Docker backend not usable: {why}")
    human = cartpole.reward_source("human")  # type: ignore[attr-defined]
    limits = Limits(wall_s=300, memory_mb=4096)
    process = train(cartpole, ProcessSandbox(), human, tmp_path / "process", limits, steps=4096)
    docker = train(cartpole, DockerSandbox(), human, tmp_path / "docker", limits, steps=4096)
    assert process.ok and docker.ok, (process.error, docker.error)
    assert process.fitness == docker.fitness
    assert [c["fitness"] for c in process.checkpoints] == [c["fitness"] for c in docker.checkpoints]
