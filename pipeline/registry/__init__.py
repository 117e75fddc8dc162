"""The evidence registry, below every step: the check registry and check results
(`checks`), artifact records (`records`, `hashing`, `tools`) and the requirement set
(`requirements`, `yamlsource`).

Every step imports it to declare its checks and record what it read and wrote; the
evidence step (pipeline.evidence) reads it back to build packages, the trace matrix and
JUnit XML. It imports no step.
"""
