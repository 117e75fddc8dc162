"""The CODEGEN-Ennn error codes and CodegenError (docs/codegen.md lists them).

Every error names where it comes from: the NNEF file, line and column of the instruction,
or the artifact path that is missing or malformed.
"""

from __future__ import annotations

from pipeline.diagnostics import NOWHERE, Location, PipelineError

CODES: dict[str, str] = {
    "CODEGEN-E001": "operation not supported by the C generator (names it, its NNEF location and the supported list)",
    "CODEGEN-E002": "operand or attribute the C generator cannot implement (element type other than scalar, "
                    "rank, attribute value)",
    "CODEGEN-E003": "input artifact missing or unreadable (split plan, schedule, item file, tensor file)",
    "CODEGEN-E004": "the item description does not check, or its schedule does not match it",
    "CODEGEN-E005": "tensor file does not match its declaration (shape, element type)",
    "CODEGEN-E006": "deployment has items of a target without a generator (cuda, nvdla)",
    "CODEGEN-E007": "generated code does not compile cleanly under the qualified flags",
    "CODEGEN-E008": "internal: the generated code or its buffer plan violates an invariant (a generator bug)",
    "CODEGEN-E009": "an nvdla item cannot be made into a loadable (legalization refused on the item file, or its "
                    "debug table cannot be traced)",
    "CODEGEN-E010": "an nvdla item next to other items whose schedule receives a value after it sends one (its "
                    "loadable is one submission of the C program's proxy, docs/codegen-nvdla.md)",
    "CODEGEN-E011": "the MISRA deviations file (pipeline/codegen/misra-deviations.json) is unreadable or does not "
                    "follow its schema (misra-deviations-1)",
    "CODEGEN-E012": "cppcheck's MISRA run failed or its XML output cannot be read (malformed, too large, not "
                    "cppcheck's format)",
}


class CodegenError(PipelineError):
    """A generator input the C generator cannot process; code from CODES."""

    def __init__(self, code: str, message: str, location: Location = NOWHERE) -> None:
        if code not in CODES:
            raise ValueError(f"undocumented codegen code {code!r}")
        super().__init__(code, message, location)
