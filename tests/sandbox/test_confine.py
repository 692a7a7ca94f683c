"""Confinement without extra packages (Landlock, seccomp, uid `nobody`), and bubblewrap's minimal root.

Each hostile check runs a snippet in a real sandboxed worker (`python -m timeit` runs one
statement: the shortest way to run code as a sandboxed module) and asserts what it could not do,
and that the host saw nothing: files unchanged, listeners that received nothing. They run on the
process backend with bubblewrap and without it (Landlock and seccomp alone); on the code before
this change the worker without bubblewrap kept uid 0 on a writable root, and bubblewrap bound the
host's whole root read-only, so every one of them failed there.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

import rewardsmith
from rewardsmith.sandbox.executor import ProcessSandbox
from rewardsmith.sandbox.types import Limits
from tests.sandbox.launcher_probe import without_and_with

LIMITS = Limits(wall_s=60, memory_mb=1024, processes=64)
ROOT = os.geteuid() == 0
# Runs before each snippet: `tried(action)` says what an attempt came to.
PRELUDE = """\
import json, os, socket
def tried(action):
    try:
        action()
        return 'DONE'
    except OSError as exc:
        return 'denied: ' + str(exc.strerror or exc)
"""


@pytest.fixture(params=["bwrap", "nobwrap"])
def process(request: pytest.FixtureRequest) -> ProcessSandbox:
    sandbox = ProcessSandbox(use_bwrap=request.param == "bwrap")
    if request.param == "bwrap" and sandbox.bwrap is None:
        pytest.skip("bubblewrap does not work here")
    if request.param == "nobwrap" and not getattr(sandbox, "landlock", 1):
        pytest.skip("no Landlock in this kernel")
    return sandbox


def attempt(sandbox: ProcessSandbox, job: Path, body: str) -> dict[str, str]:
    """Run PRELUDE + `body` in the sandbox; `body` prints one JSON object of its results."""
    job.mkdir(parents=True, exist_ok=True)
    run = sandbox.run("timeit", ["-n", "1", "-r", "1", PRELUDE + body], [job], LIMITS)
    lines = [line for line in run.output.splitlines() if line.startswith("{")]
    assert run.returncode == 0 and lines, run.output
    result: dict[str, str] = json.loads(lines[-1])
    return result


@pytest.fixture
def store() -> Iterator[Path]:
    """Another run's store where real ones live: /var/tmp, world-readable (mode 0755 and 0644)."""
    root = Path(tempfile.mkdtemp(prefix="rewardsmith-other-run-", dir="/var/tmp"))
    root.chmod(0o755)
    (root / "result.json").write_text('{"fitness": 499}')
    (root / "result.json").chmod(0o644)
    yield root
    shutil.rmtree(root, ignore_errors=True)


class UnixListener:
    """A Unix socket file anyone may connect to (mode 0777), recording what reaches it."""

    def __init__(self, path: Path) -> None:
        self.server = socket.socket(socket.AF_UNIX)
        self.server.bind(str(path))
        path.chmod(0o777)
        self.server.listen()
        self.server.settimeout(0.2)
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
                conn.settimeout(1)
                with contextlib.suppress(OSError):
                    self.received.append(conn.recv(1024) or b"<connected>")

    def close(self) -> None:
        self.stop.set()
        self.thread.join()
        self.server.close()


# --- the worker, with and without bubblewrap ----------------------------------------------------


def test_worker_cannot_write_the_virtualenv_or_the_package(
    process: ProcessSandbox, tmp_path: Path
) -> None:
    """Old code without bubblewrap: uid 0 on a writable root, so a reward could plant a `.pth`."""
    package = Path(rewardsmith.__file__).parent
    site = Path(sys.prefix) / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}"
    planted = [
        Path(sys.prefix) / f"planted-{os.getpid()}.txt",
        site / f"planted-{os.getpid()}.txt",
        package / f"planted-{os.getpid()}.txt",
    ]
    existing = [Path(rewardsmith.__file__), Path(sys.executable)]
    body = (
        "r = {}\n"
        f"for p in {[str(p) for p in planted]!r}:\n"
        "    r[p] = tried(lambda: os.close(os.open(p, os.O_WRONLY | os.O_CREAT, 0o644)))\n"
        f"for p in {[str(p) for p in existing]!r}:\n"  # opened for writing, never written
        "    r[p] = tried(lambda: os.close(os.open(p, os.O_WRONLY)))\n"
        "r['uid'] = str(os.getuid())\n"
        "print(json.dumps(r))\n"
    )
    try:
        result = attempt(process, tmp_path / "job", body)
    finally:
        for path in planted:
            path.unlink(missing_ok=True)
    assert all(result[str(p)].startswith("denied") for p in [*planted, *existing]), result
    if ROOT:
        assert result["uid"] == "65534"


def test_worker_cannot_read_other_runs_or_the_home_directory(
    process: ProcessSandbox, tmp_path: Path, store: Path
) -> None:
    """World-readable files outside the job dir: another run's store, $HOME, /srv-like dirs, and
    the checkout around an editable install (where a `.env` with API keys often lives)."""
    home_file = Path.home() / f"rewardsmith-secret-{os.getpid()}.txt"
    home_file.write_text("api key")
    checkout = Path(rewardsmith.__file__).parent.parent
    checkout_file = checkout / f".env-test-{os.getpid()}"
    if os.access(checkout, os.W_OK):
        checkout_file.write_text("OPENAI_API_KEY=sk-test")
        checkout_file.chmod(0o644)
    served = "/srv" if os.access("/srv", os.W_OK) else "/var/tmp"
    srv = Path(tempfile.mkdtemp(prefix="rewardsmith-srv-", dir=served))
    srv.chmod(0o755)
    (srv / "data.txt").write_text("served")
    (srv / "data.txt").chmod(0o644)
    targets = [store / "result.json", home_file, srv / "data.txt", checkout_file]
    body = (
        "r = {}\n"
        f"for p in {[str(p) for p in targets]!r}:\n"
        "    r[p] = tried(lambda: open(p).read())\n"
        f"for d in {[str(store), '/var/tmp', str(Path.home())]!r}:\n"
        "    r['list ' + d] = tried(lambda: os.listdir(d))\n"
        "print(json.dumps(r))\n"
    )
    try:
        result = attempt(process, tmp_path / "job", body)
    finally:
        home_file.unlink()
        checkout_file.unlink(missing_ok=True)
        shutil.rmtree(srv)
    assert all(v.startswith("denied") for v in result.values()), result


def test_worker_cannot_open_proc_sys_or_raise_its_pids_max(
    process: ProcessSandbox, tmp_path: Path
) -> None:
    """As uid 0 without capabilities the old fallback could open both for writing."""
    body = """\
r = {'sysctl': tried(lambda: os.close(os.open('/proc/sys/kernel/hostname', os.O_WRONLY)))}
lines = open('/proc/self/cgroup').read().splitlines()
pids = [line.split(':', 2)[2] for line in lines if 'pids' in line.split(':')[1].split(',')]
if pids and pids[0] != '/':
    path = '/sys/fs/cgroup/pids' + pids[0] + '/pids.max'
    r['pids.max'] = tried(lambda: open(path, 'w').write('max'))
print(json.dumps(r))
"""
    result = attempt(process, tmp_path / "job", body)
    assert result["sysctl"].startswith("denied"), result
    if process.use_cgroup and ROOT and process.bwrap is None:  # no cgroup namespace: path known
        assert result.get("pids.max", "").startswith("denied"), result
    assert all(v.startswith("denied") for v in result.values()), result


def test_worker_cannot_reach_host_unix_sockets_or_tcp_listeners(
    process: ProcessSandbox, tmp_path: Path, store: Path
) -> None:
    """A socket file another run (or a desktop session, or dockerd) listens on, and 127.0.0.1."""
    unix = UnixListener(store / "agent.sock")
    tcp = socket.create_server(("127.0.0.1", 0))
    tcp.settimeout(0.2)
    body = f"""\
def unix():
    s = socket.socket(socket.AF_UNIX)
    s.connect({str(store / "agent.sock")!r})
    s.sendall(b'stolen')
def tcp():
    socket.create_connection(('127.0.0.1', {tcp.getsockname()[1]}), timeout=2).sendall(b'stolen')
def dgram():
    socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendto(b'x', {str(store / "agent.sock")!r})
print(json.dumps({{'unix': tried(unix), 'tcp': tried(tcp), 'dgram': tried(dgram)}}))
"""
    try:
        result = attempt(process, tmp_path / "job", body)
        with contextlib.suppress(TimeoutError):
            conn, _ = tcp.accept()
            pytest.fail(f"the worker reached the TCP listener: {conn.recv(64)!r}")
    finally:
        unix.close()
        tcp.close()
    assert unix.received == []
    assert all(v.startswith("denied") for v in result.values()), result


# --- the confine launcher and its parts -------------------------------------------------------


def launch(args: list[str], code: str) -> subprocess.CompletedProcess[str]:
    """Run `code` in a new Python under the confine launcher, which may read the interpreter."""
    from rewardsmith.sandbox.process_isolation import interpreter_paths

    read = [*interpreter_paths(), Path("/usr"), Path("/etc/ld.so.cache")]
    args = [*(a for p in read for a in ("--read", str(p))), *args]
    command = [sys.executable, "-m", "rewardsmith.sandbox.confine", *args, "--"]
    return subprocess.run(
        [*command, sys.executable, "-c", code], capture_output=True, text=True, timeout=60
    )


def test_landlock_reads_only_beneath_readable_and_writes_only_beneath_writable(
    tmp_path: Path,
) -> None:
    if not ProcessSandbox(use_bwrap=False).landlock:
        pytest.skip("no Landlock in this kernel")
    shelf, desk, elsewhere = tmp_path / "shelf", tmp_path / "desk", tmp_path / "elsewhere"
    for folder in (shelf, desk, elsewhere):
        folder.mkdir()
        (folder / "note.txt").write_text("note")
    args = ["--read", str(shelf), "--write", str(desk)]
    code = f"""\
import json, os
def tried(action):
    try:
        action()
        return 'DONE'
    except OSError as exc:
        return 'denied'
print(json.dumps({{
    'read shelf': tried(lambda: open({str(shelf / "note.txt")!r}).read()),
    'write shelf': tried(lambda: open({str(shelf / "new.txt")!r}, 'w')),
    'write desk': tried(lambda: open({str(desk / "new.txt")!r}, 'w').write('x')),
    'rename desk': tried(lambda: os.rename({str(desk / "new.txt")!r}, {str(desk / "b.txt")!r})),
    'read elsewhere': tried(lambda: open({str(elsewhere / "note.txt")!r}).read()),
    'list tmp': tried(lambda: os.listdir({str(tmp_path)!r})),
    'read passwd': tried(lambda: open('/etc/passwd').read()),
}}))
"""
    done = launch([*args, "--require-landlock"], code)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "read shelf": "DONE",
        "write shelf": "denied",
        "write desk": "DONE",
        "rename desk": "DONE",
        "read elsewhere": "denied",
        "list tmp": "denied",
        "read passwd": "denied",
    }


def test_seccomp_denies_namespaces_ptrace_and_sockets_on_every_thread() -> None:
    """The filter goes on with TSYNC: a thread started before it is filtered too."""
    code = """\
import ctypes, errno, json, os, socket, threading
from rewardsmith.sandbox.seccomp import install_seccomp
libc = ctypes.CDLL(None, use_errno=True)
go, done, seen = threading.Event(), threading.Event(), {}
def early_thread():
    go.wait()
    try:
        socket.socket(socket.AF_INET)
        seen['thread inet'] = 'DONE'
    except OSError as exc:
        seen['thread inet'] = errno.errorcode[exc.errno]
    done.set()
threading.Thread(target=early_thread).start()
install_seccomp()
go.set(); done.wait()
def err(result):
    return 'DONE' if result == 0 else errno.errorcode[ctypes.get_errno()]
seen['unshare user'] = err(libc.unshare(0x10000000))
seen['unshare net'] = err(libc.unshare(0x40000000))
seen['ptrace'] = err(libc.ptrace(16, os.getppid(), 0, 0))  # PTRACE_ATTACH
seen['mount'] = err(libc.mount(b'none', b'/mnt', b'tmpfs', 0, None))
try:
    socket.socket(socket.AF_INET6)
    seen['inet6'] = 'DONE'
except OSError as exc:
    seen['inet6'] = errno.errorcode[exc.errno]
a, b = socket.socketpair()
a.sendall(b'ok'); seen['socketpair'] = b.recv(2).decode()
t = threading.Thread(target=lambda: seen.__setitem__('new thread', 'DONE')); t.start(); t.join()
pid = os.fork()
if pid == 0:
    os._exit(7)
seen['fork'] = str(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
import numpy
seen['numpy'] = str(numpy.arange(4).sum())
print(json.dumps(seen))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "thread inet": "ENETUNREACH",
        "unshare user": "EPERM",
        "unshare net": "EPERM",
        "ptrace": "EPERM",
        "mount": "EPERM",
        "inet6": "ENETUNREACH",
        "socketpair": "ok",
        "new thread": "DONE",
        "fork": "7",
        "numpy": "6",
    }


def test_confine_self_refuses_once_threads_run() -> None:
    """Landlock confines one thread: confine_self must not leave the others free."""
    code = """\
import threading
from rewardsmith.sandbox.confine import ConfinementError, confine_self, landlock_abi
if landlock_abi() == 0:
    print('no landlock'); raise SystemExit
stop = threading.Event()
threading.Thread(target=stop.wait).start()
try:
    confine_self([], [])
    print('CONFINED WITH A THREAD LEFT FREE')
except ConfinementError as exc:
    print('refused:', exc)
stop.set()
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(("refused: this process already runs 2 threads", "no landlock"))


def test_launcher_fails_closed_and_never_runs_the_command(tmp_path: Path) -> None:
    """Inside a first confinement, a second one that must mount cannot: nothing runs."""
    marker = tmp_path / "ran"
    inner = [sys.executable, "-m", "rewardsmith.sandbox.confine", "--hide", str(tmp_path), "--"]
    code = (
        "import subprocess, sys\n"
        f"done = subprocess.run({[*inner, '/bin/touch', str(marker)]!r}, capture_output=True)\n"
        "sys.stdout.write(done.stderr.decode() + f'rc={done.returncode}')\n"
    )
    done = launch(["--write", str(tmp_path)], code)
    assert done.returncode == 0, done.stderr
    message, rc = done.stdout.rsplit("rc=", 1)
    assert rc == "126" and not marker.exists()
    assert message.count("\n") == 1 and "not confined, not running /bin/touch" in message


def test_launcher_failure_in_process_never_execs(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from rewardsmith.sandbox import confine

    def refuse(*args: object) -> None:  # stands for every step: this process stays as it is
        raise confine.ConfinementError("no Landlock")

    execs: list[object] = []
    monkeypatch.setattr(confine, "launch", refuse)
    monkeypatch.setattr(confine.os, "execv", lambda *a: execs.append(a))
    assert confine.main(["--", "/bin/true"]) == confine.EXIT_NOT_CONFINED
    assert execs == []
    assert capsys.readouterr().err == (
        "rewardsmith confine: not confined, not running /bin/true: no Landlock\n"
    )


def test_seccomp_refuses_an_unknown_architecture() -> None:
    from rewardsmith.sandbox.seccomp import build_filter
    from rewardsmith.sandbox.syscall import ConfinementError

    assert len(build_filter("x86_64")) % 8 == 0 and len(build_filter("aarch64")) % 8 == 0
    with pytest.raises(ConfinementError, match="riscv64"):
        build_filter("riscv64")


# --- choosing a backend ---------------------------------------------------------------------


def test_auto_refuses_when_nothing_confines(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from rewardsmith.sandbox import executor
    from rewardsmith.sandbox.backends import choose_sandbox

    real_which = shutil.which
    monkeypatch.setattr(executor, "landlock_abi", lambda: 0)
    monkeypatch.setattr(
        executor.shutil, "which", lambda name: None if name == "bwrap" else real_which(name)
    )
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    for name in ("auto", "process"):
        with pytest.raises(ValueError, match="--sandbox none") as refused:
            choose_sandbox(name)
        assert "bubblewrap" in str(refused.value) and "Landlock" in str(refused.value)
    with pytest.raises(ValueError, match="--sandbox none"):
        ProcessSandbox().run("rewardsmith.programs.docker_probe", [], [tmp_path], LIMITS)


def test_sandbox_none_runs_unconfined_with_a_loud_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from rewardsmith.sandbox.backends import choose_sandbox

    chosen = choose_sandbox("none")
    assert chosen.sandbox.name == "none" and "UNCONFINED" in chosen.describe()
    assert "WARNING" in capsys.readouterr().err
    run = chosen.sandbox.run("rewardsmith.programs.docker_probe", [], [tmp_path], LIMITS)
    assert run.returncode == 0, run.output
    assert any("UNCONFINED" in w for w in run.warnings)


@pytest.mark.slow
def test_doctor_says_which_mechanisms_are_in_force() -> None:
    from typer.testing import CliRunner

    from rewardsmith.cli import app

    result = CliRunner().invoke(
        app, ["doctor", "--json"], env={"DOCKER_HOST": "unix:///nonexistent/docker.sock"}
    )
    assert result.exit_code == 0, result.output
    process = next(b for b in json.loads(result.output)["backends"] if b["name"] == "process")
    in_force = process["layers"]["in force"]
    assert "seccomp" in in_force and ("landlock v" in in_force or "bubblewrap" in in_force)
    live = process["live"]
    assert live["ok"] and live["host_dirs_listable"] == [] and not live["tcp_socket"]
    assert not live["var_tmp_writable"]
    # What a program may read, how memory is bounded, and whether it sees its rivals.
    layers = process["layers"]
    assert str(Path(rewardsmith.__file__).parent) in layers["reads"]
    assert layers["memory"].startswith(("a memory cgroup per run", "RLIMIT_AS; no memory cgroup"))
    hidden = ProcessSandbox().plan.hides_host  # root, a user namespace or bubblewrap
    assert layers["other candidates"].startswith("hidden" if hidden else "VISIBLE")


def test_doctor_says_where_rivals_are_visible_and_what_is_denied_there(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from rewardsmith.sandbox.backends import process_status
    from rewardsmith.sandbox.process_isolation import Isolation

    monkeypatch.setattr(Isolation, "hides_host", property(lambda self: False))
    rivals = process_status().layers["other candidates"]
    assert rivals.startswith("VISIBLE") and "attribute changes" in rivals, rivals


def test_the_launcher_denies_attribute_changes_on_request(tmp_path: Path) -> None:
    """`--no-attribute-changes` (the process backend's flag where rivals cannot be hidden): the
    mode, owner and extended attributes of a file stay as they are, and no inotify watch is set;
    without it a program may chmod its own files, as ordinary programs do."""
    code = """\
path = sys.argv[1]
open(path, 'w').close()
seen = {
    'chmod': tried(lambda: os.chmod(path, 0)),
    'chown': tried(lambda: os.chown(path, os.getuid(), os.getgid())),
    'setxattr': tried(lambda: os.setxattr(path, 'user.x', b'1')),
}
fd = libc.inotify_init()
watch = libc.inotify_add_watch(fd, path.encode(), 0xFFF)
seen['inotify'] = 'DONE' if watch >= 0 else errno.errorcode[ctypes.get_errno()]
print(json.dumps(seen))
"""
    seen = without_and_with("--no-attribute-changes", code, tmp_path)
    denied = {"chmod": "EPERM", "chown": "EPERM", "setxattr": "EPERM", "inotify": "EPERM"}
    assert seen[True] == denied
    assert seen[False]["chmod"] == "DONE"
