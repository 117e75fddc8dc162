"""Which emitter writes an item of each target into a deployment's C program.

The C deployment program (pipeline/codegen/c/generate.py) owns the item table, the sync
variables, the runtime and the harness; each item is one source file whose
`nnef_item_<X>_run(epoch)` follows the schedule with the runtime's sync objects (and, when the
item has resources of its own, an init function the harness calls once before the first
inference). This table says which emitter produces that source for a target: add a target by
adding one entry (a function returning an ItemCode; docs/codegen.md "Items of other targets").
"""

from __future__ import annotations

from typing import Callable

from pipeline.codegen.c.item import ItemEmitter
from pipeline.codegen.shared.contract import ItemCode
from pipeline.codegen.deployment import DeploymentInput, ItemInput

ItemFactory = Callable[[DeploymentInput, ItemInput, int, int, str], ItemCode]


def _cpu(deployment: DeploymentInput, item: ItemInput, index: int, lanes: int, generator: str) -> ItemCode:
    return ItemEmitter(deployment, item, index, lanes, generator).generate()


def _cuda(deployment: DeploymentInput, item: ItemInput, index: int, lanes: int, generator: str) -> ItemCode:
    from pipeline.codegen.cuda.linked import linked_item   # nvcc-side code only where a cuda item exists

    return linked_item(deployment, item, index)


def _nvdla(deployment: DeploymentInput, item: ItemInput, index: int, lanes: int, generator: str) -> ItemCode:
    from pipeline.codegen.nvdla.proxy import proxy_item   # the C proxy; the loadable is codegen/nvdla's

    return proxy_item(deployment, item, index, lanes, generator)


ITEM_EMITTERS: dict[str, ItemFactory] = {"cpu": _cpu, "cuda": _cuda, "nvdla": _nvdla}


def emitter_for(target: str) -> ItemFactory | None:
    """The emitter of items of `target` in a C deployment program, or None (no generator yet)."""
    return ITEM_EMITTERS.get(target)
