"""Stable-Baselines3 plumbing: the contract reward as a VecEnv wrapper, policy files, training state."""
