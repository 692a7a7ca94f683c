#!/usr/bin/env bash
# Meta-World's tests, in an environment of their own: metaworld 3.1.1 pins mujoco 3.3.0, which
# cannot join the default install (MuJoCo 4) nor [jax] (docs/robotics_suites.md). Runs the
# environment tests that concern Meta-World there (its own, and the shared reward checks of its
# tasks; the rest of tests/envs runs in the main environment), then its slow `train` / `run`.
set -euo pipefail
cd "$(dirname "$0")/.."

venv=.venv-metaworld
start=$SECONDS
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install -q -e '.[metaworld,robotics]' pytest pytest-timeout pytest-xdist
installed=$SECONDS
"$venv/bin/python" -c "import importlib.metadata as m; print('metaworld', m.version('metaworld'), 'mujoco', m.version('mujoco'))"

"$venv/bin/pytest" -p no:cacheprovider -q tests/envs -m "not slow" -k metaworld
"$venv/bin/pytest" -p no:cacheprovider -q tests/envs/test_metaworld_tasks.py -m slow
echo "Meta-World CI: install $((installed - start)) s, tests $((SECONDS - installed)) s"
