#!/bin/sh
# Build the Docker worker image without a registry (docker import of a tiny root filesystem; the
# host's /usr, interpreter, virtualenv and package are bind-mounted read-only at run time).
# Usage: rewardsmith/sandbox/docker/build.sh [PYTHON]   (PYTHON: the virtualenv's interpreter)
set -eu
PYTHON="${1:-python3}"
exec "$PYTHON" -m rewardsmith.sandbox.docker.image
