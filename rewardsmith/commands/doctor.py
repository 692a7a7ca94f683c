"""`rewardsmith doctor`: which sandbox backends work here, which isolation each gives, and why not.

With `--build-image` it first builds the Docker worker image without a registry.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from rewardsmith.commands.common import AddressOption, JsonOption, console, fail, print_json
from rewardsmith.commands.text import plain


def doctor(
    build_image: Annotated[
        bool,
        typer.Option(
            "--build-image", help="Build the Docker worker image first (needs no registry)."
        ),
    ] = False,
    live: Annotated[
        bool, typer.Option("--live/--no-live", help="Start a probe worker in each usable backend.")
    ] = True,
    sweep: Annotated[
        bool,
        typer.Option("--sweep", help="Remove stale worker containers (of runs that died)."),
    ] = False,
    executor: Annotated[
        str, typer.Option(help="With ray: also report the cluster's nodes, CPUs and GPUs.")
    ] = "local",
    address: AddressOption = None,
    as_json: JsonOption = False,
) -> None:
    """List the sandbox backends: usable or not (and why), their isolation, and a live check."""
    from rewardsmith.sandbox.backends import (
        choose_sandbox,
        docker_backend_status,
        live_check,
        process_status,
    )
    from rewardsmith.sandbox.docker_backend import DockerSandbox
    from rewardsmith.sandbox.executor import ProcessSandbox
    from rewardsmith.sandbox.types import SandboxUnavailable

    if build_image:
        from rewardsmith.sandbox.docker.image import IMAGE
        from rewardsmith.sandbox.docker.image import build_image as build

        try:
            image_id = build()
        except Exception as exc:
            fail(
                f"could not build {IMAGE}: {exc}",
                "is dockerd running? (apt-get install docker.io; dockerd &)",
            )
        if not as_json:
            console.print(
                f"built [bold]{IMAGE}[/] ({image_id[:19]}) with docker import; no registry used"
            )
    statuses = [process_status(), docker_backend_status()]
    if statuses[1].usable:
        statuses[1].layers = {"in force": _docker_in_force(live), **statuses[1].layers}
    sandboxes = {"process": ProcessSandbox, "docker": DockerSandbox}
    if live:
        for status in statuses:
            if status.usable:
                status.live = live_check(sandboxes[status.name]())
    try:
        auto, refusal = choose_sandbox("auto").sandbox.name, None
    except SandboxUnavailable as exc:
        auto, refusal = "refuses", str(exc)
    stale, swept = _stale_containers(sweep)
    jax = _jax_status()
    rendering = _rendering_status()
    cluster = _cluster_status(address) if executor == "ray" else None
    if as_json:
        print_json(
            {"backends": [s.to_dict() for s in statuses], "auto": auto}
            | {"stale_containers": stale, "swept_containers": swept, "jax": jax}
            | {"rendering": rendering}
            | ({"cluster": cluster} if cluster is not None else {})
        )
        return
    for status in statuses:
        table = Table(
            title=f"{status.name}: {'usable' if status.usable else 'NOT usable'}",
            show_header=False,
            title_justify="left",
        )
        table.add_column("what", style="bold")
        table.add_column("here")
        table.add_row("summary", status.summary)
        for key, value in status.layers.items():
            table.add_row(key, value)
        if status.live is not None:
            table.add_row("live check", _describe_live(status.live))
        console.print(table)
    if refusal:
        console.print(f"--sandbox auto [red]refuses[/] here: {escape(refusal)}")
    else:
        console.print(f"--sandbox auto uses [bold]{auto}[/] here.")
    _print_stale(stale, swept)
    _print_jax(jax)
    console.print(plain(f"rollout videos: {rendering['message']}"), markup=False, highlight=False)
    if cluster is not None:
        line = (
            f"ray cluster: {cluster['error']}"
            if "error" in cluster
            else f"ray cluster: {cluster['nodes']} node(s), {cluster['cpus']:g} CPUs, "
            f"{cluster['gpus']:g} GPUs ({', '.join(cluster['addresses'])})"
        )
        console.print(plain(line), markup=False, highlight=False)


def _docker_in_force(live: bool) -> str:
    """What confines a program in a container here: the launcher's seccomp filter, and Landlock
    where the engine lets a container use it (a container finds out: only with the live check)."""
    from rewardsmith.sandbox.docker_backend import DockerSandbox

    sandbox = DockerSandbox()
    if live:
        return ", ".join(sandbox.mechanisms())
    in_force = ", ".join(sandbox.mechanisms(landlock=0))
    return f"{in_force}; Landlock where the container can use it (the live check finds out)"


def _cluster_status(address: str | None) -> dict[str, Any]:
    """The Ray cluster `--executor ray` would use, or why it cannot be reached."""
    try:
        from rewardsmith.cluster.ray_executor import cluster_summary

        return cluster_summary(address)
    except Exception as exc:  # no Ray installed, no cluster at that address
        return {"error": f"{type(exc).__name__}: {exc}"}


def _jax_status() -> dict[str, Any]:
    """The JAX backend's view of this machine: JAX's devices and the GPU device files."""
    from rewardsmith.rl.jax.devices import jax_devices
    from rewardsmith.sandbox.gpu import gpu_device_files

    return {**jax_devices(), "gpu_device_files": [str(p) for p in gpu_device_files()]}


def _rendering_status() -> dict[str, Any]:
    """Whether rollout videos can be rendered here (a frame of CartPole and of HalfCheetah, in a
    child process), or what to install."""
    from rewardsmith.rl.video import rendering_status

    ok, message = rendering_status()
    return {"ok": ok, "message": message}


def _print_jax(jax: dict[str, Any]) -> None:
    if "error" in jax:
        console.print(plain(f"jax backend: {jax['error']}"), markup=False, highlight=False)
        return
    devices = ", ".join(jax["devices"])
    files = ", ".join(jax["gpu_device_files"]) or "none"
    line = (
        f"jax backend: JAX {jax['version']}, default backend {jax['backend']}, devices: {devices}; "
        f"GPU device files given to the sandboxes: {files}"
    )
    console.print(plain(line), markup=False, highlight=False)


def _stale_containers(sweep: bool) -> tuple[list[dict[str, Any]] | None, list[dict[str, Any]]]:
    """Worker containers no live orchestrator will remove (None: no engine), and those swept."""
    from rewardsmith.sandbox.docker_backend import stale_containers, sweep_stale_containers

    swept = [c.to_dict() for c in sweep_stale_containers()] if sweep else []
    stale = stale_containers()
    return (None if stale is None else [c.to_dict() for c in stale]), swept


def _print_stale(stale: list[dict[str, Any]] | None, swept: list[dict[str, Any]]) -> None:
    for c in swept:
        line = f"removed stale container {c['id'][:12]} (run {c['run'] or '?'})"
        console.print(plain(line), markup=False, highlight=False)
    if not stale:
        return
    console.print(f"[yellow]{len(stale)} stale worker container(s)[/] (orchestrator gone):")
    for c in stale:
        line = f"  {c['id'][:12]}  run {c['run'] or '?'}  {c['state']}: {c['reason']}"
        console.print(plain(line), markup=False, highlight=False)
    console.print(
        "remove them with `rewardsmith doctor --sweep`; the next run or train with the Docker "
        "sandbox sweeps them too.",
        markup=False,
    )


def _describe_live(live: dict[str, Any]) -> str:
    if not live.get("ok"):
        error = escape(plain(live.get("error", "")))  # the probe's output: plain text
        return f"[red]FAILED[/] after {live.get('start_s')} s: {error}"
    writable = "[red]root writable[/]" if live["root_writable"] else "root read-only"
    caps = (
        "no capabilities"
        if set(str(live["capabilities"])) <= {"0"}
        else f"[red]capabilities {live['capabilities']}[/]"
    )
    listable = live.get("host_dirs_listable", [])
    host = f"[red]can list {', '.join(listable)}[/]" if listable else "host dirs unreadable"
    tcp = "TCP socket opens (no route out)" if live.get("tcp_socket") else "TCP socket refused"
    return (
        f"ok in {live['start_s']} s: uid {live['uid']}, {caps}, "
        f"interfaces {', '.join(live['interfaces'])}, "
        f"{writable}, {host}, {tcp}, {len(live['environment'])} environment variables"
    )
