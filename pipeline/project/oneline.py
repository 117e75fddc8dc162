"""One console line: what `doit verify` writes fits a terminal and is never cut inside a word."""

from __future__ import annotations

MAX_LINE = 240   # the longest console line `doit verify` writes (summary, progress, log records)


def shorten(text: str, width: int = MAX_LINE) -> str:
    """`text` on one line of at most `width` characters, cut between words (`...` marks a cut)."""
    text = " ".join(str(text).splitlines()).replace("\t", " ")
    if len(text) <= width:
        return text
    cut = text.rfind(" ", 0, width - 3)
    return (text[:cut] if cut > 0 else text[: width - 3]).rstrip(" ,;:") + "..."
