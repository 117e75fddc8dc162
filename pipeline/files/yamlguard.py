"""YAML judged before it is built: size, file kind, anchors/aliases and nesting, from the event stream.

PyYAML builds what a document says. An alias bomb (`a: &a [x, x]`, `b: &b [*a, *a]`, ...)
is a few hundred bytes whose composed node graph is shared, but every walk over it (key
positions, schema validation) is exponential: minutes and gigabytes. A FIFO or /dev/zero
named as a spec never ends; a deeply nested `[[[[...]]]]` exhausts Python's recursion.
Every YAML file we read from a user (deployment specs, requirement files) therefore goes
through `read_bounded` (a regular file no larger than a limit) and `screen` (the parser's
event stream, refused at the first anchor or alias and beyond a nesting depth), both before
any node is composed. Our YAML files use neither anchors nor aliases: each value is written
where it applies, which is also what a reviewer reads.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

import yaml

from pipeline.diagnostics import Location, PipelineError
from pipeline.files.readguard import TOO_LARGE, InputRefused, read_input

MAX_DEPTH = 32   # nesting of mappings and sequences; our schemas need at most 6
MAX_NUMBER_CHARS = 1000   # a plain scalar that reads as a number: Python refuses int() beyond 4,300 digits
_NUMBERISH = re.compile(r"[-+]?[0-9][0-9a-fA-FxXoObB_:.eE+-]*")


@dataclass(frozen=True)
class Refusal:
    """Why a YAML input is refused: a sentence, the 1-based line and column (0 when unknown), and
    whether the file could not be read at all (`unreadable`: missing, permissions, not UTF-8)."""

    message: str
    line: int = 0
    column: int = 0
    unreadable: bool = False


MAX_LIMIT = 1 << 50          # the largest limit an environment variable may set (1 PiB, 10^15 entries)
E_LIMIT_VARIABLE = "PIPE-E013"


def limit_from_env(variable: str, default: int) -> int:
    """The limit `variable` sets in the environment, else `default` (unset or empty).

    PIPE-E013 for a value that is not a positive decimal integer of at most MAX_LIMIT: a limit
    of 10^23 once reached `read(10^23 + 1)` (OverflowError), and a misspelt one silently kept
    the default; both are refused, naming the variable.
    """
    text = os.environ.get(variable, "").strip()
    if not text:
        return default
    if len(text) > 20 or not text.isascii() or not text.isdigit() or not 0 < int(text) <= MAX_LIMIT:
        raise PipelineError(E_LIMIT_VARIABLE, f"the environment variable {variable} is {text[:40]!r}: a limit is a "
                            f"positive whole number of at most {MAX_LIMIT} (unset it for the default, {default})",
                            Location(key_path=variable))
    return int(text)


def read_bounded(path: str | os.PathLike[str], max_bytes: int, variable: str = "") -> tuple[str | None, Refusal | None]:
    """The UTF-8 text of `path`, or why not: a symbolic link, not a regular file, larger than `max_bytes`, unreadable.

    Opened by pipeline.files.readguard: the last component is never a followed link, the kind and
    size are judged from `fstat` of the opened file (no race between a check and the read),
    and at most `max_bytes + 1` bytes are ever read.
    """
    try:
        data = read_input(path, max_bytes=max_bytes)
    except InputRefused as refused:
        if refused.unreadable:
            return None, Refusal(f"cannot read the file: {refused.reason}", unreadable=True)
        if refused.kind == TOO_LARGE:
            how = f" (raise it with the environment variable {variable})" if variable else ""
            return None, Refusal(f"the file has {refused.size} bytes, more than the limit of {max_bytes}{how}")
        return None, Refusal(f"the file is refused: {refused.reason}")
    except OSError as exc:
        return None, Refusal(f"cannot read the file: {exc.strerror or exc}", unreadable=True)
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        return None, Refusal(f"not UTF-8 text: byte {exc.start} cannot be decoded", unreadable=True)


def _mark(event: Any) -> tuple[int, int]:
    mark = getattr(event, "start_mark", None)
    return (mark.line + 1, mark.column + 1) if mark is not None else (0, 0)


def screen(text: str, loader: Any = yaml.SafeLoader, max_depth: int = MAX_DEPTH) -> Refusal | None:
    """The first anchor, alias, too deep nesting or too long number in `text`'s event stream, or None.

    Streams parser events (linear in the text); nothing is composed or constructed, so a
    refusal comes before any expansion. YAML syntax errors are left to the caller's loader,
    which reports them with its own position.
    """
    depth = 0
    try:
        for event in yaml.parse(text, Loader=loader):
            if isinstance(event, yaml.AliasEvent):
                line, column = _mark(event)
                return Refusal(f"YAML alias '*{event.anchor}' refused: anchors and aliases are not accepted "
                               "(write each value where it applies)", line, column)
            anchor = getattr(event, "anchor", None)
            if anchor is not None and isinstance(event, yaml.NodeEvent):
                line, column = _mark(event)
                return Refusal(f"YAML anchor '&{anchor}' refused: anchors and aliases are not accepted "
                               "(write each value where it applies)", line, column)
            if isinstance(event, yaml.ScalarEvent) and not event.style and len(event.value) > MAX_NUMBER_CHARS \
                    and _NUMBERISH.fullmatch(event.value):
                line, column = _mark(event)
                return Refusal(f"a number of {len(event.value)} characters refused (at most {MAX_NUMBER_CHARS})",
                               line, column)
            if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                depth += 1
                if depth > max_depth:
                    line, column = _mark(event)
                    return Refusal(f"nesting deeper than {max_depth} mappings/sequences refused", line, column)
            elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                depth -= 1
    except yaml.YAMLError as exc:
        # libyaml >= the one in PyYAML 6.0.4 refuses deep flow nesting itself, while scanning ahead of
        # the events counted above: the same refusal, at the scanner's position
        if "nesting depth" in str(getattr(exc, "problem", "") or ""):
            mark = getattr(exc, "problem_mark", None)
            line, column = (mark.line + 1, mark.column + 1) if mark is not None else (0, 0)
            return Refusal(f"nesting deeper than {max_depth} mappings/sequences refused", line, column)
        return None
    except RecursionError:  # pragma: no cover - the depth bound comes first
        return Refusal(f"nesting deeper than {max_depth} mappings/sequences refused")
    return None
