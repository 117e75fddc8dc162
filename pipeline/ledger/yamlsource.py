"""YAML read with source positions: every value keeps the line and column it came from.

PyYAML's plain `safe_load` forgets where a value was and silently keeps the last of two
duplicate keys. Requirement files are reviewed by people, so an error must point at the
file, the key path and the line; we compose the node tree ourselves to keep those.

Before composing, the file is judged (pipeline.files.yamlguard): a regular file of at most
MAX_BYTES (environment variable PIPELINE_MAX_REQUIREMENTS_BYTES), no anchor or alias (an
alias bomb would be exponential to walk), nesting within yamlguard.MAX_DEPTH; each refusal
is an EVID-E001 finding with its line.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from pipeline.diagnostics import Finding, Severity, Span
from pipeline.files.yamlguard import limit_from_env, read_bounded, screen

CODE_SYNTAX = "EVID-E001"
CODE_DUPLICATE_KEY = "EVID-E008"
MAX_BYTES = 4 << 20   # a requirement file today is ~20 KiB
MAX_BYTES_VARIABLE = "PIPELINE_MAX_REQUIREMENTS_BYTES"


@dataclass
class Located:
    """A parsed YAML document plus the position of every key path in it."""

    file: str
    value: Any
    positions: dict[str, tuple[int, int]] = field(default_factory=dict)

    def span(self, key_path: str) -> Span:
        """The position of `key_path`, or of its nearest recorded ancestor."""
        path = key_path
        while path and path not in self.positions:
            cut = max(path.rfind("."), path.rfind("["))
            path = path[:cut] if cut > 0 else ""
        line, column = self.positions.get(path, (1, 1))
        return Span(self.file, line, column)


def join_path(parent: str, key: str | int) -> str:
    """Key paths read like code: `requirements[3].parents[0]`."""
    if isinstance(key, int):
        return f"{parent}[{key}]"
    return f"{parent}.{key}" if parent else str(key)


def _position(node: yaml.Node) -> tuple[int, int]:
    return node.start_mark.line + 1, node.start_mark.column + 1


def _convert(
    loader: yaml.SafeLoader,
    node: yaml.Node,
    path: str,
    located: Located,
    findings: list[Finding],
) -> Any:
    located.positions.setdefault(path, _position(node))
    if isinstance(node, yaml.MappingNode):
        result: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):    # `? [a, b]`: once kept as the text "['a', 'b']"
                line, column = _position(key_node)
                findings.append(Finding(CODE_SYNTAX, Severity.ERROR, f"{path or 'the document'}: a key is a "
                                        f"{'list' if isinstance(key_node, yaml.SequenceNode) else 'mapping'}, not a "
                                        "name (keys are plain names)", Span(located.file, line, column)))
                continue
            key = loader.construct_object(key_node, deep=True)
            if not isinstance(key, (str, int, float, bool)) and key is not None:
                key = str(key)
            child = join_path(path, str(key))
            if key in result:
                line, column = _position(key_node)
                first = located.positions.get(child, (0, 0))
                findings.append(
                    Finding(
                        CODE_DUPLICATE_KEY,
                        Severity.ERROR,
                        f"{child}: duplicate key {key!r} (first at line {first[0]}); YAML would keep only the last",
                        Span(located.file, line, column),
                    )
                )
                continue
            located.positions[child] = _position(key_node)
            result[key] = _convert(loader, value_node, child, located, findings)
        return result
    if isinstance(node, yaml.SequenceNode):
        return [
            _convert(loader, item, join_path(path, index), located, findings)
            for index, item in enumerate(node.value)
        ]
    return loader.construct_object(node, deep=True)


def load_located(path: str | Path, display_name: str | None = None) -> tuple[Located | None, list[Finding]]:
    """Parse one YAML file; syntax errors and duplicate keys come back as findings."""
    name = display_name or str(path)
    findings: list[Finding] = []
    text, refusal = read_bounded(path, limit_from_env(MAX_BYTES_VARIABLE, MAX_BYTES), MAX_BYTES_VARIABLE)
    if text is None:
        assert refusal is not None
        return None, [Finding(CODE_SYNTAX, Severity.ERROR, f"requirement file refused: {refusal.message}", Span(name, 1, 1))]
    refusal = screen(text, yaml.SafeLoader)
    if refusal is not None:
        return None, [Finding(CODE_SYNTAX, Severity.ERROR, refusal.message,
                              Span(name, refusal.line or 1, refusal.column or 1))]
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        located = Located(name, None)
        if node is not None:
            located.value = _convert(loader, node, "", located, findings)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        span = Span(name, mark.line + 1, mark.column + 1) if mark else Span(name, 1, 1)
        problem = " ".join(p for p in (exc.context, exc.problem) if p)
        return None, [Finding(CODE_SYNTAX, Severity.ERROR, f"YAML syntax error: {problem}", span)]
    except yaml.YAMLError as exc:
        return None, [Finding(CODE_SYNTAX, Severity.ERROR, f"YAML error: {exc}", Span(name, 1, 1))]
    finally:
        loader.dispose()
    return located, findings
