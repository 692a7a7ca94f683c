"""Run by `rewardsmith doctor` inside the worker image: proves the interpreter and package load."""

import sys

import numpy

import rewardsmith

print(f"rewardsmith worker ok: Python {sys.version.split()[0]}, numpy {numpy.__version__}, {rewardsmith.__name__}")
