"""The scratch project of the tests of nvdla items next to cpu items (tests/codegen/test_nvdla_proxy.py,
tests/execute/test_nvdla_mixed.py, tests/compare/test_nvdla_mixed.py), built once per session
(tests/conftest.py `dla_mixed`).

lenet5 `convdla` as shipped (convolutions and pooling on DLA0, the dense part on CPU1), `dla2`, a
two-DLA-item split of it (conv1 block on DLA0, conv2 block on DLA1, dense on CPU1), and `dlaonly2`
(two DLA items, no CPU item): split, generated, run (10 vectors) and compared once. A test that
changes a file restores it.
"""

from __future__ import annotations

import shutil
from pathlib import Path

MODEL = "lenet5"
VECTORS = 10
DEPLOYMENTS = """deployments:
  convdla:
    items: [{name: DLA0, target: nvdla}, {name: CPU1, target: cpu}]
    default_item: DLA0
    allocation:
      CPU1: [flatten, fc1, relu3, fc2, relu4, fc3, prob]
    sync: event
  dla2:
    items: [{name: DLA0, target: nvdla}, {name: DLA1, target: nvdla}, {name: CPU1, target: cpu}]
    default_item: DLA0
    allocation:
      DLA1: [conv2, relu2, pool2]
      CPU1: [flatten, fc1, relu3, fc2, relu4, fc3, prob]
    sync: event
  dlaonly2:
    items: [{name: DLA0, target: nvdla}, {name: DLA1, target: nvdla}]
    default_item: DLA0
    allocation:
      DLA1: [flatten, fc1, relu3, fc2, relu4, fc3, prob]
    sync: event"""


def build(exported_project: Path, folder: Path) -> tuple:
    """(root, codegen results by (subject, check), execute documents, compare results by (subject, check))."""
    from pipeline.codegen.step import run_codegen_step
    from pipeline.compare.step import run_compare_step
    from pipeline.execute.step import run_execute_step
    from pipeline.split.step import run_split_step
    from tests.projects import ROOT as PROJECT_ROOT, copy_exports

    root = copy_exports(exported_project, folder, [MODEL])
    (root / "models").unlink()
    shutil.copytree(PROJECT_ROOT / "models" / MODEL, root / "models" / MODEL)
    spec = root / "models" / MODEL / "deploy.yaml"
    text = spec.read_text()
    start, end = text.index("deployments:\n"), text.index("\nmet:")
    spec.write_text(text[:start] + DEPLOYMENTS + text[end:])
    run_split_step(MODEL, root, vectors=1)
    codegen = {(r.subject, r.check_id): r for r in run_codegen_step(MODEL, root)}
    documents = run_execute_step(MODEL, root, vectors=VECTORS, runs=20, instructions=False)
    compared = {(r.subject, r.check_id): r for r in run_compare_step(MODEL, root)}
    return root, codegen, documents, compared


def c_folder(root: Path, deployment: str) -> Path:
    return root / "artifacts" / MODEL / "codegen" / "c" / deployment


def nvdla_folder(root: Path, deployment: str) -> Path:
    return root / "artifacts" / MODEL / "codegen" / "nvdla" / deployment


