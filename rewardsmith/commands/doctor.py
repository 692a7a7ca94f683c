"""`rewardsmith doctor`: which sandbox backends work here, which isolation each gives, and why not.

With `--build-image` it first builds the Docker worker image without a registry.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.table import Table

from rewardsmith.commands.common import JsonOption, console, fail, print_json


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
    sandboxes = {"process": ProcessSandbox, "docker": DockerSandbox}
    if live:
        for status in statuses:
            if status.usable:
                status.live = live_check(sandboxes[status.name]())
    auto = choose_sandbox("auto").sandbox.name
    if as_json:
        print_json({"backends": [s.to_dict() for s in statuses], "auto": auto})
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
    console.print(f"--sandbox auto uses [bold]{auto}[/] here.")


def _describe_live(live: dict[str, Any]) -> str:
    if not live.get("ok"):
        return f"[red]FAILED[/] after {live.get('start_s')} s: {live.get('error', '')}"
    writable = "[red]root writable[/]" if live["root_writable"] else "root read-only"
    caps = (
        "no capabilities"
        if set(str(live["capabilities"])) <= {"0"}
        else f"[red]capabilities {live['capabilities']}[/]"
    )
    return (
        f"ok in {live['start_s']} s: uid {live['uid']}, {caps}, "
        f"interfaces {', '.join(live['interfaces'])}, "
        f"{writable}, {len(live['environment'])} environment variables"
    )
