"""The orchestrator's side of each sandboxed program: build its inputs, run it through the
sandbox runner, and return a checked record or a named error."""
