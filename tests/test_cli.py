"""`python -m pipeline` (and `nncert`): the command list, the main job named, "did you mean"."""

from __future__ import annotations

import pytest

from pipeline import cli


def test_commands_in_chain_order_and_doit_verify_named(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main([]) == 2
    text = capsys.readouterr().err
    assert "doit verify" in text and "nncert" in text
    order = ["export", "check", "interpret", "split", "petri", "codegen", "execute", "compare", "evidence"]
    positions = [text.index(f"\n    {name} ") for name in order]
    assert positions == sorted(positions), positions


@pytest.mark.parametrize("argv, hint", [
    (["expor"], "did you mean 'export'?"),
    (["evidence", "verfy", "x"], "did you mean 'verify'?"),
    (["check", "--jsn", "x.nnef"], "did you mean '--json' for '--jsn'?"),
])
def test_typos_get_a_suggestion(argv: list[str], hint: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(argv) == 2
    assert hint in capsys.readouterr().err


def test_nonsense_gets_no_suggestion(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["zzzzqqq"]) == 2
    assert "did you mean" not in capsys.readouterr().err


def test_codegen_help_says_what_it_generates(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["codegen", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "CUDA" in text and "NVDLA loadable" in text and "all cpu" not in text


def test_console_script_is_declared() -> None:
    import tomllib

    from tests.projects import ROOT

    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["scripts"]
    assert scripts["nncert"] == "pipeline.cli:main"


def test_the_command_table_is_what_the_modules_register() -> None:
    assert sorted(cli.COMMAND_OF.values()) == sorted(cli.COMMAND_MODULES)
    for name, module in cli.COMMAND_OF.items():
        parser = cli.build_parser([name])
        subparsers = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
        assert list(subparsers.choices) == [name], module


def test_a_command_imports_only_its_own_module() -> None:
    import subprocess
    import sys

    probe = ("import sys; from pipeline import cli; code = cli.main(['-v', 'check', '--help']); "
             "print(code, sorted(m for m in cli.COMMAND_MODULES if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.splitlines()[-1] == "0 ['pipeline.nnef.command']", out.stdout[-2000:]
    # with no command we know, every command is there to list or to suggest
    assert cli._command_modules(["chek"]) == cli.COMMAND_MODULES == cli._command_modules([])
