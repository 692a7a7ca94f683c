"""Trusted RL plumbing that both the orchestrator and the sandboxed programs use."""
