"""The prove step: Frama-C's EVA on every C item, proving the absence of run-time errors for
every input in the deploy.yaml range (docs/prove.md)."""
