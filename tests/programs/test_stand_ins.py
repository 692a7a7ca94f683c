"""The training programs build and step torch's optimizers without importing TorchDynamo, and
import torch without its tracing machinery; they train exactly as with them, and get the real
module the moment anything more is asked of one."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

# Fresh interpreters that train or import TorchDynamo: 30 s in all. The fast tier's trainings run
# with the stand-ins anyway.
pytestmark = pytest.mark.slow

# Trains a tiny PPO and a tiny SAC in a fresh interpreter, saving and reloading each, with the
# training worker's stand-ins but the one named in argv[1] ("none": all of them); prints the
# weights' checksums and what the modules named after it were at the end.
TRAIN = """
import importlib, json, sys, tempfile
for stand_in in ("no_tracing", "no_dynamo"):
    if stand_in != sys.argv[1]:
        importlib.import_module("rewardsmith.programs." + stand_in)
import gymnasium as gym, torch
torch.set_num_threads(1)
from stable_baselines3 import PPO, SAC
learners = {"ppo": (PPO, "CartPole-v1", {"n_steps": 64, "batch_size": 32, "n_epochs": 2}),
            "sac": (SAC, "Pendulum-v1", {"learning_starts": 16, "batch_size": 16, "buffer_size": 256})}
weights = {}
for name, (cls, env_id, kwargs) in learners.items():
    model = cls("MlpPolicy", gym.make(env_id), seed=0, device="cpu", **kwargs)
    model.learn(128)
    with tempfile.TemporaryDirectory() as folder:
        model.save(folder + "/model.zip")
        model = cls.load(folder + "/model.zip", device="cpu")
    weights[name] = sum(float(p.double().abs().sum()) for p in model.policy.parameters())
kinds = {name: type(sys.modules.get(name)).__name__ for name in sys.argv[2:]}
print(json.dumps({"weights": weights, "modules": kinds}))
"""
STOOD_IN = {"no_dynamo": "torch._dynamo", "no_tracing": "torch._meta_registrations"}


def train(left_out: str, module: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", TRAIN, left_out, module], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return result


@pytest.mark.parametrize("stand_in", sorted(STOOD_IN))
def test_ppo_and_sac_train_the_same_without_the_module_ever_imported(stand_in: str) -> None:
    module = STOOD_IN[stand_in]
    with_stand_in, with_real = train("none", module), train(stand_in, module)
    assert with_stand_in["modules"][module] == "StandIn", "training never needed the real one"
    assert with_real["modules"][module] == "module", "torch imports it on its own: a real saving"
    assert with_stand_in["weights"] == with_real["weights"]


def test_anything_more_loads_the_real_module_in_its_place() -> None:
    probe = """
import sys, torch, rewardsmith.programs.no_dynamo
from rewardsmith.stand_in import StandIn
assert isinstance(sys.modules["torch._dynamo"], StandIn)
import torch._dynamo.config  # a submodule
real = sys.modules["torch._dynamo"]
assert not isinstance(real, StandIn) and torch._dynamo is real
assert callable(real.reset) and torch._dynamo.config.cache_size_limit > 0
print("ok")
"""
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]


def test_an_attribute_the_stand_in_lacks_loads_the_real_module() -> None:
    probe = """
import sys, torch, rewardsmith.programs.no_dynamo
from rewardsmith.stand_in import StandIn
optimize = torch._dynamo.optimize
assert not isinstance(sys.modules["torch._dynamo"], StandIn)
assert optimize is sys.modules["torch._dynamo"].optimize
print("ok")
"""
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]


def test_a_tracer_imported_later_gets_torch_as_it_would_have_been() -> None:
    # The optimizers' real TorchDynamo (no `no_dynamo`), then `torch.export`: each imports what
    # the stand-in kept out (a cycle in torch's own imports broke TorchDynamo's without it).
    probe = """
import sys, rewardsmith.programs.no_tracing, torch
from rewardsmith.stand_in import StandIn
assert isinstance(sys.modules["torch._meta_registrations"], StandIn)
assert "torch._prims" not in sys.modules and "torch._decomp" not in sys.modules
torch.optim.Adam(torch.nn.Linear(2, 1).parameters()).step()  # imports torch._dynamo
assert not isinstance(sys.modules["torch._meta_registrations"], StandIn) and "torch._dynamo" in sys.modules
program = torch.export.export(torch.nn.Linear(2, 1), (torch.ones(1, 2),))
assert program.module()(torch.ones(1, 2)).shape == (1, 1)
assert torch.empty(3, device="meta").new_zeros(2).shape == (2,)
print("ok")
"""
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]
