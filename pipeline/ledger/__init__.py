"""The ledger, below every step: what the pipeline checks and what each step wrote.

The declared checks and their results (`checks`), the artifact records of every step run
(`records`, with the digests of `hashing`, the tool versions of `tools` and the no-stale-output
rule of `freshness`) and the requirement set they trace to (`requirements`, read with source
positions by `yamlsource`). Every step imports it to declare its checks and record what it
read and wrote; the evidence step (pipeline.evidence) reads it back to build packages, the
trace matrix and JUnit XML. It imports no step.

(The package was called `registry` before issue 31: "registry" also named the semantic kernels, the
export converters and the evidence step's view of checks; each now has its own word.)
"""
