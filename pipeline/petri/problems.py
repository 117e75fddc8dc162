"""The PETRI-Ennn codes: one stable code per kind of problem the Petri step reports.

Codes below 100 are bad input (the command exits 2); codes from 100 on name the kind of
counterexample an analysis found (the check fails, the command exits 1). docs/petri.md
lists them with the same one-line descriptions.
"""

from __future__ import annotations

CODES: dict[str, str] = {
    # bad input
    "PETRI-E001": "a description does not parse or check (syntax or static-semantics errors)",
    "PETRI-E002": "no graph to translate, or plain graphs mixed with graphitems",
    "PETRI-E003": "unknown encoding (ours | paper)",
    "PETRI-E010": "schedule.json does not follow its schema",
    "PETRI-E011": "plan.json does not follow its schema",
    "PETRI-E012": "a trace does not follow its schema",
    "PETRI-E013": "a JSON file cannot be read or is not JSON",
    # counterexamples: execution model (HLR-EXE-001)
    "PETRI-E101": "the final marking is not reachable from the initial marking",
    "PETRI-E102": "deadlock: an instruction waits for a value no instruction produces (missing producer)",
    "PETRI-E103": "deadlock: instructions wait for each other in a cycle",
    "PETRI-E104": "a token is left over: a value computed or sent is never consumed",
    "PETRI-E105": "a transition does not fire exactly once on every maximal run",
    "PETRI-E106": "the net is not in the form the structural analyses require",
    # equivalence of the split (HLR-EXE-002, HLR-SPL-001)
    "PETRI-E110": "an instruction of the original is missing from the split, duplicated, or added",
    "PETRI-E111": "an instruction of the split differs from the original's (operation, attributes, literals)",
    "PETRI-E112": "an argument is delivered by a different producer than in the original (wrong variable)",
    "PETRI-E113": "the outputs of the split differ from the original's",
    "PETRI-E114": "sync transitions forward each other in a cycle",
    # static schedules (HLR-EXE-003)
    "PETRI-E120": "a schedule does not list exactly the item's instructions",
    "PETRI-E121": "a schedule runs a step before the step producing one of its inputs",
    "PETRI-E122": "the schedules deadlock under their sync implementation (circular wait)",
    "PETRI-E123": "barrier mode: the items do not pass the same barriers in the same order",
    "PETRI-E124": "barrier mode: a get is not separated from its send by a barrier",
    # traces (HLR-EXE-004)
    "PETRI-E130": "a trace does not follow the schedule (missing, repeated or reordered events)",
    "PETRI-E131": "a trace violates a data dependency inside an item (consumer started before its producer ended)",
    "PETRI-E132": "a trace violates a dependency between items (no global order explains the per-item logs)",
    # pipelining (HLR-EXE-001)
    "PETRI-E140": "the periodic net is not live for the pipeline depth (a token-free cycle)",
    "PETRI-E141": "the periodic net is not bounded (a place on no cycle accumulates tokens)",
}


def describe(code: str) -> str:
    """The one-line description of `code` (KeyError for an unknown code)."""
    return CODES[code]
