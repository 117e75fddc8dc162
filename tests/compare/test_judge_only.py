"""compare judges, it does not transform: its code (the import closure doit uses as the step's dependencies)
holds nothing of the exporter, the split's legalization and planner, the generators or the runners. What it
needs from them it reads from their records (split/whole-dla.json, codegen's build.json through execute's
run.json), so a defect in a transformation cannot be repeated by the judge that checks it."""

from __future__ import annotations

from pipeline.project.closure import closure

# The only modules of earlier steps compare may load: file names of the split's outputs.
ALLOWED = {"pipeline.split", "pipeline.split.outputs"}
TRANSFORMING = ("pipeline.export", "pipeline.split", "pipeline.codegen", "pipeline.execute")


def transforming_modules(roots: list[str]) -> list[str]:
    modules = closure(roots, root=None).modules
    return sorted(m for m in modules if m.startswith(TRANSFORMING) and m not in ALLOWED
                  and m.split(".")[1] in {p.split(".")[1] for p in TRANSFORMING})


def test_compare_imports_no_transformation():
    assert transforming_modules(["pipeline.compare.step", "pipeline.compare.tasks", "pipeline.compare.command"]) == []


def test_the_rule_sees_a_transformation_imported_by_the_judge():
    # execute's step is a transformation (it builds and runs the code); its closure reaches the generators
    assert "pipeline.codegen.program.generate" not in transforming_modules(["pipeline.compare.step"])
    assert any(m.startswith("pipeline.codegen") for m in transforming_modules(["pipeline.execute.step"]))
