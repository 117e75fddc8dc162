"""A fake project tree for the evidence tests: requirements, models, step artifacts, results.

The pipeline steps are written elsewhere; these tests must not depend on them. A
`FakeProject` writes what a step would leave (artifacts, checks.json through
`results_document`, record.json through `record_step`) for checks registered here.
"""

from __future__ import annotations

import contextlib
import json
import random
import shutil
from pathlib import Path
from typing import Iterator, Mapping

import yaml

from pipeline.files.atomic import write_bytes, write_json, write_text
from pipeline.ledger import checks
from pipeline.ledger.checks import CheckResult, Verdict, register_check, results_document
from pipeline.ledger.hashing import sha256_file
from pipeline.ledger.records import record_step
from pipeline.project.layout import checks_path, step_dir

REPO = Path(__file__).resolve().parents[2]

# check id -> (step, requirements)
FAKE_CHECKS: dict[str, tuple[str, tuple[str, ...]]] = {
    "export.numeric": ("export", ("HLR-EXP-001",)),
    "nnef.syntax": ("check", ("HLR-FMT-001",)),
    "petri.final_marking": ("petri", ("HLR-EXE-001",)),
    "codegen.trace": ("codegen", ("HLR-COD-002",)),
}

# A requirement subset whose every requirement the fake checks + evidence checks can verify.
MINIMAL_IDS = {
    "SYS-001", "SYS-005", "HLR-EXP-001", "HLR-COD-002", "HLR-TRC-001", "HLR-TRC-002", "HLR-TRC-003",
    "LLR-TRC-001", "LLR-TRC-002", "LLR-TRC-003", "LLR-TRC-004", "LLR-TRC-005", "LLR-TRC-006", "LLR-TRC-007",
}
MINIMAL_CHECKS = {k: v for k, v in FAKE_CHECKS.items() if k in ("export.numeric", "codegen.trace")}


@contextlib.contextmanager
def isolated_registry(specs: Mapping[str, tuple[str, tuple[str, ...]]] = FAKE_CHECKS) -> Iterator[None]:
    """Only the evidence checks plus `specs` are registered inside the block."""
    saved = dict(checks._REGISTRY)
    saved_modules = checks.CHECK_MODULES
    try:
        for key in [k for k in checks._REGISTRY if not k.startswith("evidence.")]:
            del checks._REGISTRY[key]
        checks.CHECK_MODULES = ("pipeline.evidence.selfchecks",)
        for check_id, (step, reqs) in specs.items():
            register_check(check_id, f"fake {check_id}", step, reqs)
        yield
    finally:
        checks._REGISTRY.clear()
        checks._REGISTRY.update(saved)
        checks.CHECK_MODULES = saved_modules


def write_requirements(root: Path, ids: set[str] | None = None) -> None:
    """Copy the real requirement files, optionally keeping only `ids`."""
    target = root / "requirements"
    target.mkdir(parents=True, exist_ok=True)
    for path in sorted((REPO / "requirements").glob("*.yaml")):
        if ids is None:
            shutil.copyfile(path, target / path.name)
            continue
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        data["requirements"] = [r for r in data["requirements"] if r["id"] in ids]
        for r in data["requirements"]:
            r["parents"] = [p for p in r.get("parents", []) if p in ids]
        if data["requirements"]:
            write_text(target / path.name, yaml.safe_dump(data, sort_keys=False, width=100))


# A valid deployment spec (doit refuses a model folder whose spec does not validate).
FAKE_SPEC = """\
schema_version: 1
model: {model}
inputs:
  input: {{shape: [1, 10], distribution: {{kind: uniform, low: 0.0, high: 1.0}}}}
validation: {{vectors: 4, seed: 1, tolerance: {{max_abs_error: 1.0e-5, max_rel_error: null}}}}
deployments:
  single: {{items: [{{name: ITEM1, target: cpu}}], default_item: ITEM1, sync: event}}
met: {{runs: 10, budget_us: 1000}}
"""


class FakeProject:
    """Writes models and step outputs under `root` as the real steps would."""

    def __init__(self, root: Path, minimal: bool = False, requirements: bool = True) -> None:
        self.root = root
        if requirements:
            write_requirements(root, MINIMAL_IDS if minimal else None)

    def add_model(
        self,
        model: str,
        verdicts: Mapping[str, tuple[str, str]] | None = None,
        steps: tuple[str, ...] = ("export", "check", "petri", "codegen"),
        weight_bytes: int = 4096,
        seed: int = 0,
        measured: Mapping[str, dict] | None = None,
    ) -> None:
        """`verdicts`: check id -> (verdict, reason); default every fake check passes.
        `measured`: check id -> the figures its result records (default a zero error)."""
        verdicts = dict(verdicts or {})
        self.measured = dict(measured or {})
        rng = random.Random(f"{model}:{seed}")
        mdir = self.root / "models" / model
        write_bytes(mdir / "model.onnx", rng.randbytes(2048))
        write_text(mdir / "deploy.yaml", FAKE_SPEC.format(model=model))
        onnx = f"models/{model}/model.onnx"
        nnef = f"artifacts/{model}/export/graph.nnef"
        if "export" in steps:
            lines = ["version 1.0;", "graph G( input ) -> ( output )", "{"]
            lines += [f"    v{i} = relu(v{i - 1});" if i else "    v0 = external<scalar>(shape = [1, 10]);" for i in range(8)]
            lines += ["    output = copy(v7);", "}"]
            write_text(self.root / nnef, "\n".join(lines) + "\n")
            write_bytes(self.root / f"artifacts/{model}/export/weights/conv1.dat", rng.randbytes(weight_bytes))
            self._results(model, "export", verdicts, read=[onnx], written=[nnef])
            record_step(model, "export", inputs=[onnx], command=["python", "-m", "pipeline", "export", onnx], root=self.root)
        for step in ("check", "petri"):
            if step in steps:
                write_json(self.root / f"artifacts/{model}/{step}/report.json", {"schema_version": 1, "model": model, "ok": True})
                self._results(model, step, verdicts, read=[nnef])
                record_step(model, step, inputs=[nnef], command=f"python -m pipeline {step} {nnef}", root=self.root)
        if "codegen" in steps:
            code = f"artifacts/{model}/codegen/c/ITEM1.c"
            body = [f"/* NNEF {nnef}:{i + 4} v{i} */\nstatic void op{i}(void) {{ }}" for i in range(8)]
            write_text(self.root / code, "\n".join(body) + "\n")
            trace = {
                "schema_version": 1,
                "item": "ITEM1",
                "target": "c",
                "nnef_file": nnef,
                "nnef_sha256": sha256_file(self.root / nnef),
                "entries": [
                    {"nnef_line": i + 4, "instruction": f"v{i} = ...", "code_file": code, "code_lines": [2 * i + 1, 2 * i + 2]}
                    for i in range(8)
                ],
            }
            write_json(self.root / f"artifacts/{model}/codegen/c/trace.json", trace)
            self._results(model, "codegen", verdicts, read=[nnef], written=[code])
            record_step(model, "codegen", inputs=[nnef], command=["python", "-m", "pipeline", "codegen"], root=self.root)

    def _results(self, model: str, step: str, verdicts: Mapping[str, tuple[str, str]], read: list[str], written: list[str] | None = None) -> None:
        results = []
        for check_id, spec in checks._REGISTRY.items():
            if spec.step != step:
                continue
            verdict, reason = verdicts.get(check_id, ("pass", ""))
            if verdict == "absent":
                continue
            figures = getattr(self, "measured", {}).get(check_id, {"max_abs_error": 0.0})
            results.append(CheckResult(check_id, model, Verdict(verdict), reason, measured=figures, read=read, written=written or []))
        write_json(checks_path(model, step, self.root), results_document(results))

    def write_checks_json(self, model: str, step: str, document: object) -> None:
        write_json(step_dir(model, step, self.root) / "checks.json", document)


def load(path: Path) -> object:
    return json.loads(path.read_text(encoding="utf-8"))
