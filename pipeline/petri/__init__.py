"""Petri-net semantics of NNEF descriptions and their splits (docs/design.md, "The execution model"; docs/petri.md).

translate (Translations 1 and 2, our encoding and the paper's) -> net -> analysis
(reachability, deadlock, leftover tokens, fire-once), paths (valid paths), equivalence
(split vs original), schedule (static schedules), trace (replay), pipelining +
markedgraph (periodic inference), pnml / dot (outputs), verify (all of it), step / tasks /
command (the `petri` step, its doit task and `python -m pipeline petri`). docs/petri.md
explains the encodings and why each structural algorithm is exact.
"""
