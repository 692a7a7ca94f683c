"""Shared fixtures: the scripted LLM server (test equipment) and the network guard."""

from tests.llm_fixtures import no_remote_network, scripted_llm  # noqa: F401
