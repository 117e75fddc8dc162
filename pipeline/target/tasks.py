"""doit tasks of the run step: `target:<model>` for every shipped model.

doit reserves `run` (one of its commands) as a task name, so the step's task group is named
after its package; its artifacts are artifacts/<m>/run/ as pipeline.layout.STEPS says. The
evidence tasks do not list it by name: they depend on the compare step, whose file_dep on the
run's targets makes doit run this task first.

Each sub-task builds and runs every generated deployment (pipeline.target.step). It depends
on the spec (vectors, seed, MET runs), on codegen's status.json (which holds the sha256 of
every generated file) and on the sources of the runtime, the builder and the runner. Its
targets include the trace files, which the Petri step replays when they exist.
"""

from __future__ import annotations

from typing import Any, Iterator

from pipeline.codegen.tasks import sources
from pipeline.deploy import DeployError, load_deploy
from pipeline.evidence.records import RECORD_FILE
from pipeline.layout import checks_path, model_dir, model_names, step_dir
from pipeline.target.step import NOISE_SEEDS, RUN_FILE

SOURCE_GLOBS = ("target/*.py", "codegen/c/runtime/*", "vectors.py", "deploy.py", "nnef/tensorfile.py", "atomic.py")


def _deployments(model: str) -> list[tuple[str, bool]]:
    """(deployment, whether all its items are cpu) of the model's spec."""
    try:
        spec = load_deploy(model_dir(model) / "deploy.yaml")
    except DeployError:
        return []
    return [(name, all(i.target == "cpu" for i in d.items)) for name, d in spec.deployments.items()]


def _run(model: str) -> bool:
    from pipeline.target.step import run_run_step

    run_run_step(model, ".")
    return True  # measurements; the compare step judges them


def task_target() -> Iterator[dict[str, Any]]:
    """Build, run, trace (with and without noise), time and count instructions of each deployment."""
    deps = sources(SOURCE_GLOBS)
    for model in model_names("."):
        out = step_dir(model, "run")
        targets = [checks_path(model, "run").as_posix(), (out / RECORD_FILE).as_posix()]
        for name, cpu_only in _deployments(model):
            folder = out / name
            targets.append((folder / RUN_FILE).as_posix())
            if cpu_only:
                targets += [(folder / f"trace-{kind}.json").as_posix()
                            for kind in ["plain"] + [f"noise-{seed}" for seed in NOISE_SEEDS]]
        yield {
            "name": model,
            "doc": f"build and run {model}'s generated code: outputs, traces, timings, instruction counts",
            "actions": [(_run, [model])],
            "file_dep": [(model_dir(model) / "deploy.yaml").as_posix(),
                         (step_dir(model, "codegen") / "status.json").as_posix()] + deps,
            "targets": targets,
            "clean": True,
        }


