"""The programs that run inside a sandbox: each a `python -m` entry point, read top to bottom.

Only these load reward code (`rewardsmith.reward.loader`); they import neither the loop, the run
store, the CLI nor the cluster. Their orchestrator sides are in `rewardsmith.jobs`.
"""
