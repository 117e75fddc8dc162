"""The check step: the exported NNEF description judged by the format's checker
(pipeline.nnef) and by the reference semantics' own order check (pipeline.semantics).

A step package of its own, after export on the data path, because it uses both layers below
it; the format layer (pipeline.nnef) stays free of the semantics. docs/nnef.md.
"""
