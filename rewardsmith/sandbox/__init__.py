"""Sandboxed execution of candidate rewards: the training worker, the evaluator and executors."""
