"""Hostile input, round four (issue 39): bounds from the environment, reads that reserve what they read,
last round's held-out set under a 2 GB address-space limit, what reaches a terminal, deploy.yaml values
ending in a newline, requirement keys that are lists.

The runner faults are in tests/platforms/test_runner_faults.py, the flag rules in
tests/platforms/test_flags.py, the evidence commands in tests/evidence/test_evidence_round4.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline import cli
from pipeline.diagnostics import Location, PipelineError, printable
from pipeline.files.readguard import read_input
from pipeline.files.yamlguard import MAX_LIMIT, limit_from_env
from pipeline.project.deploy import DeployError, parse_deploy_text
from pipeline.terminal import render_error

REPO = Path(__file__).resolve().parents[1]
TWO_GB = 2_000_000_000
ESC = "\x1b]0;owned\x07\x1b[2J"


def _limited(code: str, limit: int = TWO_GB, timeout: float = 600, **env: str) -> subprocess.CompletedProcess[str]:
    prefix = f"import resource\nresource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit}))\n"
    return subprocess.run([sys.executable, "-c", prefix + code], capture_output=True, text=True, timeout=timeout,
                          cwd=REPO, env={**os.environ, **env})


# ---------------------------------------------------------------- bounds from the environment

@pytest.mark.parametrize("value", [str(10**23), "0", "-5", "12abc", "1e9", "٣", str(MAX_LIMIT + 1), " 9" * 12])
def test_a_limit_from_the_environment_that_is_nonsense_is_refused(value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PIPELINE_MAX_ONNX_NODES", value)
    with pytest.raises(PipelineError) as error:
        limit_from_env("PIPELINE_MAX_ONNX_NODES", 10_000)
    assert error.value.code == "PIPE-E013" and "PIPELINE_MAX_ONNX_NODES" in error.value.message


def test_a_sensible_or_absent_limit_is_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PIPELINE_MAX_ONNX_NODES", raising=False)
    assert limit_from_env("PIPELINE_MAX_ONNX_NODES", 10_000) == 10_000
    monkeypatch.setenv("PIPELINE_MAX_ONNX_NODES", " 20000 ")
    assert limit_from_env("PIPELINE_MAX_ONNX_NODES", 10_000) == 20_000
    monkeypatch.setenv("PIPELINE_MAX_ONNX_NODES", "")
    assert limit_from_env("PIPELINE_MAX_ONNX_NODES", 10_000) == 10_000


def test_a_limit_of_10_to_the_23_is_coded_on_the_command_line(tmp_path: Path) -> None:
    """Once PIPE-E900 OverflowError (read(10**23 + 1)); now PIPE-E013 naming the variable, exit 2."""
    package = tmp_path / "evidence.zip"
    package.write_bytes(b"PK\x05\x06" + b"\0" * 18)
    done = subprocess.run([sys.executable, "-m", "pipeline", "evidence", "verify", str(package)], capture_output=True,
                          text=True, timeout=120, cwd=REPO,
                          env={**os.environ, "PIPELINE_MAX_MANIFEST_BYTES": str(10**23)})
    assert done.returncode == 2 and "PIPE-E013" in done.stderr and "PIPELINE_MAX_MANIFEST_BYTES" in done.stderr
    assert "Traceback" not in done.stderr and "PIPE-E900" not in done.stderr


def test_a_nonsense_problem_count_still_draws_the_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PIPELINE_MAX_PROBLEMS_SHOWN", "lots")
    drawn = render_error(PipelineError("DEPLOY-E001", "the spec is broken", Location.in_file("deploy.yaml")))
    assert "DEPLOY-E001" in drawn and "PIPE-E013" in drawn


# ---------------------------------------------------------------- reads reserve what the file holds

def test_a_small_file_read_with_a_huge_limit_reserves_only_its_size(tmp_path: Path) -> None:
    small = tmp_path / "small.onnx"
    small.write_bytes(b"x" * 300)
    assert read_input(small, max_bytes=300) == b"x" * 300
    done = _limited(f"from pipeline.files.readguard import read_input\n"
                    f"print(len(read_input({str(small)!r}, max_bytes={4 << 30})))")
    assert done.returncode == 0 and done.stdout.strip() == "300", done.stderr[-2000:]


def test_a_file_that_grows_while_read_is_refused_at_the_limit(tmp_path: Path) -> None:
    from pipeline.files.readguard import read_bounded

    grown = tmp_path / "grown"
    grown.write_bytes(b"y" * 5000)
    with open(grown, "rb", buffering=0) as handle:
        assert len(read_bounded(handle, 100, 1000)) == 1001     # judged at 100 bytes, read past the limit of 1000
    with open(grown, "rb", buffering=0) as handle:
        assert read_bounded(handle, 5000, 10_000) == b"y" * 5000


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS is Linux's")
def test_last_rounds_hostile_set_holds_under_a_2_gb_address_space() -> None:
    """Round three's hostile tests (export, deploy.yaml, evidence verify and merge) in a child whose address
    space is limited to 2 GB: every export once failed there with PIPE-E900 MemoryError (read_input reserved
    its 2 GiB limit for a 300-byte file)."""
    suites = ["tests/export/test_export_hostile.py", "tests/deploy/test_deploy_hostile.py",
              "tests/evidence/test_evidence_verify_hostile.py", "tests/evidence/test_evidence_merge_hostile.py"]
    done = _limited("import sys, pytest\n"
                    f"sys.exit(pytest.main(['-q', '-n', '0', '-p', 'no:cacheprovider', *{suites!r}]))",
                    timeout=900, NNCERT_FUZZ_SECONDS="4")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


# ---------------------------------------------------------------- what reaches a terminal

def test_printable_escapes_every_control_character() -> None:
    text = f"name{ESC}\u202etxt.exe\r\x9b31m\x7f\ttab\nnext"
    shown = printable(text)
    assert not any(c in shown for c in "\x1b\x07\u202e\r\x9b\x7f") and "\ttab\nnext" in shown
    assert "\\x1b]0;owned\\x07" in shown and "\\u202e" in shown
    assert printable(shown) == shown and "\n" not in printable("a\nb", newlines=False)


def _spec_with(deployment: str = "", platforms: str = "") -> str:
    text = (REPO / "models/lenet5/deploy.yaml").read_text(encoding="utf-8")
    start = text.index("deployments:\n") + len("deployments:\n")
    return text[:start] + deployment + text[start:] + (f"platforms:\n{platforms}" if platforms else "")


def test_a_platform_name_with_escape_sequences_is_escaped_in_deploy_e013() -> None:
    spec = _spec_with('  a:\n    platform: "zz\\e]0;owned\\a\\e[2J"\n    items: [{name: CPU0, target: cpu}]\n'
                      "    default_item: CPU0\n    sync: event\n")
    with pytest.raises(DeployError) as error:
        parse_deploy_text(spec, "deploy.yaml")
    assert "DEPLOY-E013" in {p.code for p in error.value.problems}
    drawn = render_error(error.value)
    assert "\x1b" not in drawn and "\x07" not in drawn and "\\x1b]0;owned" in drawn


def test_a_binary_file_is_never_drawn_under_a_problem(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    binary = tmp_path / "evidence.zip"
    binary.write_bytes(b"PK\x03\x04\x1b[2J\x00\x01FIRSTLINE\n")
    drawn = render_error(PipelineError("EVID-E050", "tampered", Location(str(binary), 1, 1)))
    assert drawn.count("\n") == 0 and "FIRSTLINE" not in drawn


def test_a_traceback_free_internal_error_escapes_its_message(monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    def explode(_: object) -> int:
        raise RuntimeError(f"bad {ESC}")

    monkeypatch.setattr(cli, "COMMAND_MODULES", ("pipeline.evidence.command",))
    import pipeline.evidence.command as command

    monkeypatch.setattr(command, "_verify", explode)
    assert cli.main(["evidence", "verify", "x.zip"]) == 2
    err = capsys.readouterr().err
    assert "PIPE-E900" in err and "\x1b" not in err


# ---------------------------------------------------------------- deploy.yaml values and requirement keys

@pytest.mark.parametrize("key, value", [("compiler", "gcc\\n"), ("runner.user", "root\\n"), ("runner.host", "orin\\n"),
                                        ("runner.workdir", "/tmp\\n"), ("architecture", "aarch64\\n"),
                                        ("runner.identity", "keys/orin\\n"), ("compiler_package", "gcc\\n")])
def test_deploy_values_ending_in_a_newline_are_refused(key: str, value: str) -> None:
    body = {"architecture": "aarch64", "compiler": "aarch64-linux-gnu-gcc", "compiler_package": "gcc"}
    runner = {"kind": "ssh", "host": "orin.lab", "user": "nvidia", "identity": "keys/orin", "workdir": "/tmp"}
    where, _, name = key.rpartition(".")
    (runner if where == "runner" else body)[name] = value
    fields = ", ".join(f'{k}: "{v}"' for k, v in runner.items())
    platform = "".join(f'    {k}: "{v}"\n' for k, v in body.items())
    spec = _spec_with(platforms=f"  orin:\n{platform}    lanes: 4\n    runner: {{{fields}}}\n")
    with pytest.raises(DeployError) as error:
        parse_deploy_text(spec, "deploy.yaml")
    paths = {p.path for p in error.value.problems}
    assert f"platforms.orin.{key}" in paths, [(p.code, p.path, p.message) for p in error.value.problems]
    assert "\\n" in render_error(error.value)


def test_a_requirement_parameter_keyed_by_a_list_is_refused(tmp_path: Path) -> None:
    from pipeline.ledger.yamlsource import load_located

    path = tmp_path / "sys.yaml"
    path.write_text("requirements:\n  - id: SYS-001\n    parameters:\n      ? [a, b]\n      : 1\n")
    located, findings = load_located(path)
    assert [f.code for f in findings] == ["EVID-E001"] and "a key is a list" in findings[0].message
    assert findings[0].span is not None and findings[0].span.line == 4
    assert "['a', 'b']" not in str(located.value if located else "")
