"""Helpers of the mixed CPU + CUDA tests: a scratch project with one shipped model split, a mixed
deployment generated into the folder the execute step reads, and that step's input vectors.

The shipped mixed deployments: branch3 `paper3gpu` (barrier sync: ITEM1 cpu, ITEM2 and ITEM3 cuda)
and lenet5 `convgpu` (event sync: GPU0 cuda, CPU1 cpu).
"""

from __future__ import annotations

from pathlib import Path

from pipeline.codegen.program.generate import generate_deployment
from pipeline.codegen.shared.deployment import load_deployment
from pipeline.project.deploy import load_deploy
from pipeline.execute.harness import write_input_vectors
from pipeline.execute.step import code_folder
from pipeline.project.layout import model_dir, step_dir
from tests.projects import copy_exports

MIXED = {"paper3gpu": ("branch3", "barrier"), "convgpu": ("lenet5", "event")}


def project(exported: Path, folder: Path, model: str) -> Path:
    """A scratch project holding `model`'s export and its split (all deployments)."""
    from pipeline.split.step import run_split_step

    root = copy_exports(exported, folder, [model])
    run_split_step(model, root, vectors=1)
    return root


def generate(root: Path, model: str, deployment: str) -> Path:
    """The C program of `deployment` in artifacts/<m>/codegen/c/<deployment>/ (where execute reads it)."""
    folder = code_folder(model, deployment, root)
    split = step_dir(model, "split", root) / deployment
    generate_deployment(load_deployment(split, step_dir(model, "export", root), root), folder)
    return folder


def inputs(root: Path, model: str, vectors: int) -> Path:
    """The execute step's input vectors (the deployment's seed), under artifacts/<m>/execute/inputs."""
    spec = load_deploy(model_dir(model, root) / "deploy.yaml")
    folder = step_dir(model, "execute", root) / "inputs"
    write_input_vectors(spec.inputs, vectors, spec.validation.seed, folder)
    return folder
