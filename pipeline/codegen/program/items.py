"""Which emitter writes an item of each target into a deployment's C program.

The deployment program (pipeline/codegen/program/generate.py) owns the item table, the sync
variables, the runtime and the harness; each item is one source file whose
`nnef_item_<X>_run(epoch)` follows the schedule with the runtime's sync objects (and, when the
item has resources of its own, an init function the harness calls once before the first
inference): the item contract, pipeline/codegen/shared/contract.py. This table says which emitter
produces that source for a target: add a target by adding one entry (a function returning an
ItemCode; docs/codegen.md "Items of other targets").
"""

from __future__ import annotations

from typing import Callable

from pipeline.codegen.c.item import ItemEmitter
from pipeline.codegen.cuda.linked import linked_item
from pipeline.codegen.shared.deployment import DeploymentInput, ItemInput
from pipeline.codegen.nvdla.proxy import proxy_item
from pipeline.codegen.shared.contract import ItemCode

ItemFactory = Callable[[DeploymentInput, ItemInput, int, int, str], ItemCode]

# The reason recorded for a deployment with an item of a target this table lacks (codegen and execute steps).
NO_GENERATOR = "no item emitter (pipeline/codegen/program/items.py) for the target of"


def _cpu(deployment: DeploymentInput, item: ItemInput, index: int, lanes: int, generator: str) -> ItemCode:
    return ItemEmitter(deployment, item, index, lanes, generator).generate()


def _cuda(deployment: DeploymentInput, item: ItemInput, index: int, lanes: int, generator: str) -> ItemCode:
    return linked_item(deployment, item, index)   # the .cu of the item; its kernels are cuda/'s


def _nvdla(deployment: DeploymentInput, item: ItemInput, index: int, lanes: int, generator: str) -> ItemCode:
    return proxy_item(deployment, item, index, lanes, generator)   # the C proxy; the loadable is nvdla/generate.py's


ITEM_EMITTERS: dict[str, ItemFactory] = {"cpu": _cpu, "cuda": _cuda, "nvdla": _nvdla}


def emitter_for(target: str) -> ItemFactory | None:
    """The emitter of items of `target` in a C deployment program, or None (no generator yet)."""
    return ITEM_EMITTERS.get(target)
