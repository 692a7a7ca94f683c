"""The training programs build and step torch's optimizers without importing TorchDynamo, train
exactly as with it, and get the real module the moment anything more is asked of it."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

# Fresh interpreters that train or import TorchDynamo: 20 s in all. The fast tier's trainings run
# with the stand-in anyway.
pytestmark = pytest.mark.slow

# Trains a tiny PPO and a tiny SAC in a fresh interpreter; prints their weights' checksums and what
# `torch._dynamo` was at the end.
TRAIN = """
import json, sys
if sys.argv[1] == "stand-in":
    import rewardsmith.programs.no_dynamo
import gymnasium as gym, torch
torch.set_num_threads(1)
from stable_baselines3 import PPO, SAC
learners = {"ppo": (PPO, "CartPole-v1", {"n_steps": 64, "batch_size": 32, "n_epochs": 2}),
            "sac": (SAC, "Pendulum-v1", {"learning_starts": 16, "batch_size": 16, "buffer_size": 256})}
weights = {}
for name, (cls, env_id, kwargs) in learners.items():
    model = cls("MlpPolicy", gym.make(env_id), seed=0, device="cpu", **kwargs)
    model.learn(128)
    weights[name] = sum(float(p.double().abs().sum()) for p in model.policy.parameters())
print(json.dumps({"weights": weights, "dynamo": type(sys.modules.get("torch._dynamo")).__name__}))
"""


def train(variant: str) -> dict[str, object]:
    done = subprocess.run([sys.executable, "-c", TRAIN, variant], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
    return result


def test_ppo_and_sac_train_the_same_without_dynamo_ever_imported() -> None:
    with_stand_in, with_dynamo = train("stand-in"), train("real")
    assert with_stand_in["dynamo"] == "StandIn", "the optimizers never needed the real module"
    assert with_dynamo["dynamo"] == "module", "torch imports it on its own: the saving is real"
    assert with_stand_in["weights"] == with_dynamo["weights"]


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
