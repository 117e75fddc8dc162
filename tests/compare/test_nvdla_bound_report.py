"""Issue 42: the NVDLA FP16 bound's judgement as reported and as a verdict (pipeline/compare/nvdla_bound.py).

A judgement passes only with no element beyond, at least one vector judged, and the deployment's stated
FP16 requirement met; its report names the figures under the keys the compare step and the evidence read.
"""

from __future__ import annotations

from pipeline.compare.nvdla_bound import ABSOLUTE, BOUND, BoundJudgement


def _judgement(**fields) -> BoundJudgement:  # type: ignore[no-untyped-def]
    base = {"basis": BOUND, "absolute": 0.05, "vectors": 3, "max_abs_error": 1e-3, "max_bound": 4e-3, "max_ratio": 0.25,
            "outputs": {"y": {"basis": BOUND, "max_bound": 4e-3}}}
    return BoundJudgement(**{**base, **fields})


def test_a_judgement_passes_only_with_nothing_beyond_some_vectors_and_the_requirement_met() -> None:
    assert _judgement().passed
    assert not _judgement(beyond=1).passed
    assert not _judgement(vectors=0).passed                   # nothing judged is no pass
    assert not _judgement(requirement_ok=False).passed


def test_the_judgement_s_report() -> None:
    first = {"output": "y", "vector": 2, "index": [0, 1]}
    report = _judgement(beyond=2, first_beyond=first, why="w", arithmetic={"accumulate": "fp32"},
                        requirement={"max_abs_error": 0.01}).to_json()
    assert report == {"basis": BOUND, "why": "w", "vectors": 3, "arithmetic": {"accumulate": "fp32"},
                      "absolute_max_abs_error": 0.05, "max_abs_error_to_exact": 1e-3, "max_bound": 4e-3,
                      "max_error_to_bound": 0.25, "elements_beyond": 2, "first_beyond": first,
                      "nvdla_operations": None, "decisions": {}, "measure": "the enclosure",
                      "outputs": {"y": {"basis": BOUND, "max_bound": 4e-3}}, "deployment_requirement": {"max_abs_error": 0.01}}
    absolute = _judgement(basis=ABSOLUTE, outputs={"y": {"basis": ABSOLUTE}}).to_json()
    assert absolute["max_bound"] is None and absolute["max_error_to_bound"] is None     # no bound applied: none shown
    assert _judgement(outputs={}).to_json()["max_bound"] == 4e-3
    assert _judgement(basis=ABSOLUTE, outputs={}).to_json()["max_bound"] is None
