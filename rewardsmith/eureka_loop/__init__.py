"""The evolution loop: designer, critic, preference check, analyzer, selection and LLM access."""
