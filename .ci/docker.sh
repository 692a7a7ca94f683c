#!/bin/sh
# Make the sandbox backends usable on a CI machine before pytest: install Docker's engine and
# bubblewrap if missing, start dockerd if it is not running, wait for it, and build the worker
# image without a registry. Run from the repository root, as root:
#
#   .ci/docker.sh [PYTHON]      (PYTHON: the virtualenv's interpreter, default .venv/bin/python)
#
# It never fails the build for Docker alone: without an engine the Docker tests skip with the
# reason, and the process backend is tested regardless. A missing bubblewrap is an error.
set -u
PYTHON="${1:-.venv/bin/python}"
log() { echo "[.ci/docker.sh] $*"; }
engine_up() { "$PYTHON" -c "import docker; docker.from_env(timeout=5).ping()" >/dev/null 2>&1; }

missing=""
command -v dockerd >/dev/null 2>&1 || missing="$missing docker.io"
command -v bwrap >/dev/null 2>&1 || missing="$missing bubblewrap"
if [ -n "$missing" ]; then
    log "installing:$missing"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq $missing >/dev/null || log "apt-get install failed"
fi
command -v bwrap >/dev/null 2>&1 || { log "bubblewrap is required for the process sandbox"; exit 1; }

if ! command -v dockerd >/dev/null 2>&1; then
    log "no dockerd: the Docker tests will be skipped"
    exit 0
fi
if ! engine_up; then
    log "starting dockerd (log: /tmp/dockerd.log)"
    nohup dockerd >/tmp/dockerd.log 2>&1 &
    i=0
    until engine_up; do
        i=$((i + 1))
        if [ "$i" -ge 60 ]; then
            log "dockerd did not come up in 60 s; the Docker tests will be skipped"
            tail -20 /tmp/dockerd.log
            exit 0
        fi
        sleep 1
    done
fi
log "dockerd is up"
"$PYTHON" -m rewardsmith.sandbox.docker.image || { log "building the worker image failed"; exit 1; }
