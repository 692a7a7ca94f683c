"""Where candidates train: on this machine (the default) or as tasks on a Ray cluster.

An executor trains one reward and evaluates its policy, as `rewardsmith.jobs.training.
train_reward` does, and leaves every file of the candidate in the run store on this machine. The
store never leaves the machine that runs the loop; only a job's inputs travel out, and its files
and outcome come back (docs/cluster.md).
"""
