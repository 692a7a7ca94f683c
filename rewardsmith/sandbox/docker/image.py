"""Build the Docker worker image without a registry, with `docker import` of a tiny root filesystem.

No registry is reachable on the machines this runs on, so the image is not pulled: it is a
root filesystem of a few kilobytes (empty mount points, `/etc/passwd`, symlinks like `/bin ->
usr/bin`) made here as a tarball and imported. At run time the Docker backend bind-mounts,
read-only, the host's `/usr` (and any real `/lib*` directories), the interpreter, the virtualenv
and the package source. The image therefore never goes stale when the code changes, and the
worker runs exactly the interpreter and libraries the orchestrator runs (so both backends train
to the same fitness). Machines with a registry can instead build the self-contained image from
`Dockerfile` in this directory; its `rewardsmith.mode` label tells the backend not to mount.

Run `python -m rewardsmith.sandbox.docker.image` (or `rewardsmith doctor --build-image`).
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import tarfile
from pathlib import Path
from typing import Any

IMAGE = "rewardsmith-worker:latest"
LABEL_KIND = "rewardsmith.worker-image"
LABEL_MODE = "rewardsmith.mode"  # "host-mounts" (this module) or "self-contained" (Dockerfile)
LABEL_HOST_DIRS = "rewardsmith.host-dirs"  # top-level host directories to bind read-only
LABEL_VERSION = "rewardsmith.image-version"
IMAGE_VERSION = "2"  # bump when the backend needs something new of the image; older ones rebuild
# The self-contained image's interpreter (Dockerfile: python:3.11-slim), by absolute path: the
# confine launcher execs it directly, without a shell to search PATH.
SELF_CONTAINED_PYTHON = "/usr/local/bin/python"
TOP_LEVEL = ("bin", "lib", "lib32", "lib64", "libx32")
# `sbin` stays a real directory: Docker mounts its init (`--init`) at /sbin/docker-init.
EMPTY_DIRS = (
    "dev",
    "proc",
    "sys",
    "tmp",
    "run",
    "root",
    "home",
    "etc",
    "usr",
    "var",
    "work",
    "opt",
    "sbin",
)
ETC_FILES = {
    "etc/passwd": (
        "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n"
    ),
    "etc/group": "root:x:0:\nnogroup:x:65534:\n",
    "etc/hosts": "127.0.0.1 localhost\n",
    "etc/nsswitch.conf": "passwd: files\ngroup: files\nhosts: files\n",
}


def host_layout() -> tuple[dict[str, str], list[str]]:
    """Top-level entries to copy: symlinks (usrmerge: `lib -> usr/lib`) and real dirs to mount."""
    links: dict[str, str] = {}
    dirs = ["usr"]
    for name in TOP_LEVEL:
        path = Path("/") / name
        if path.is_symlink():
            links[name] = os.readlink(path)
        elif path.is_dir():
            dirs.append(name)
    return links, dirs


def rootfs_tar() -> tuple[bytes, list[str]]:
    """The image's whole root filesystem as a tarball, and the host dirs it expects mounted."""
    links, dirs = host_layout()
    buffer = io.BytesIO()
    now = 0  # reproducible: the same layer every build
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name in sorted({*EMPTY_DIRS, *(d for d in dirs if d not in links)}):
            info = tarfile.TarInfo(name)
            info.type, info.mtime = tarfile.DIRTYPE, now
            info.mode = 0o1777 if name == "tmp" else 0o755
            tar.addfile(info)
        for name, target in links.items():
            info = tarfile.TarInfo(name)
            info.type, info.linkname, info.mtime = tarfile.SYMTYPE, target, now
            tar.addfile(info)
        for name, text in ETC_FILES.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), 0o644, now
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue(), dirs


def build_image(client: Any = None, image: str = IMAGE) -> str:
    """Import the root filesystem as `image`; returns the image id. Needs no registry."""
    import docker

    client = client or docker.from_env(timeout=120)
    old = None
    with contextlib.suppress(docker.errors.ImageNotFound):
        old = client.images.get(image).id
    data, dirs = rootfs_tar()
    repository, _, tag = image.partition(":")
    changes = [
        f'LABEL {LABEL_KIND}="1" {LABEL_MODE}="host-mounts" {LABEL_HOST_DIRS}="{",".join(dirs)}" '
        f'{LABEL_VERSION}="{IMAGE_VERSION}"',
        "ENV PATH=/usr/local/bin:/usr/bin:/bin",
        "WORKDIR /tmp",
    ]
    client.api.import_image_from_data(
        data, repository=repository, tag=tag or "latest", changes=changes
    )
    new = str(client.images.get(image).id)
    if old is not None and old != new:
        with contextlib.suppress(docker.errors.APIError):
            client.images.remove(old)  # the previous build, now untagged
    return new


def main() -> int:
    """Build the image, then start one worker in it; exit status 1 if that worker fails."""
    image_id = build_image()
    print(f"built {IMAGE} ({image_id[:19]}) by docker import; no registry needed")
    from rewardsmith.sandbox.docker_backend import check_worker

    ok, message = check_worker()
    print(message)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
