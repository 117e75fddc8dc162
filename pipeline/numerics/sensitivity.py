"""The error bound of an implementation on one input vector, from the network's sensitivity at the vector.

Write every tensor the implementation computes as x^ = x + e, x the exact value. An operation computes
op(x^_in) with its own rounding eta, so e_out = op(x^_in) - op(x_in) + eta = J e_in + r + eta: J the
operation's Jacobian at the vector, r the remainder of the linearization (a kink the error may cross,
a second derivative), eta the local rounding. Unrolled over the graph, each output's error is exactly

    e_out = sum over operations k of J_(out <- k) (eta_k + r_k) (+ the known errors of stored constants)

with J_(out <- k) the network's Jacobian from operation k's result to the output, at the vector: the
row of each output element is one backward pass (reverse mode, `Step.vjp`), so the bound weighs each
rounding by the network's actual sensitivity instead of products of |W|. Per output element:

* `deterministic` = sum |J| d + sum |J| rho + |shift|: every elementary rounding at its worst, in the
  same direction (d: the sum of their bounds; rho the remainder): holds for any rounding outcome, and
  is as large as that: a dot product of n terms contributes n roundings' worth, a network 10^5 sources
  aligned. It is recorded, never used as a tolerance (docs/compare.md, "Why the worst case cannot
  discriminate").
* `probabilistic` = |shift| + min(LAMBDA sqrt(sum J^2 q^2), sum |J| d) + sum |J| rho: the elementary
  roundings as independent, mean-zero, bounded random variables (Higham and Mary's model, SIAM J. Sci.
  Comput. 41(5), 2019; q the root sum of squares of their bounds), Hoeffding's inequality: each element
  is within it with probability at least 1 - 2 exp(-LAMBDA^2 / 2) = 1 - 3.0e-8 (and never above the
  worst case, which holds always). This is the bound the checks use: it discriminates (docs/compare.md).
* `shift`: errors known with their sign (an FP16-stored constant or input, a lookup table's own error),
  carried exactly to first order.

The remainders need each tensor's error B (the `spread`): a first-order simulation of the model's
rounding errors (SAMPLES random draws through the linearized network, plus the known errors) gives its
root mean square per element; B = LAMBDA * SAFETY times it (the draws' own sampling error covered by
SAFETY). A decision (relu, max pool, clip, a comparison) whose margin exceeds B is stable; one that does
not contributes its remainder (the excess), and the count of such decisions is recorded.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import onnx

from pipeline.numerics.arithmetic import Arithmetic
from pipeline.numerics.graph import Graph, GraphRefused, Op, prepare
from pipeline.numerics.products import single_thread
from pipeline.numerics.rules import Context, Local, NoRule, Rounding, Spread, Step, rule_of

LAMBDA = 6.0
FAILURE_PROBABILITY = 2.0 * math.exp(-LAMBDA * LAMBDA / 2.0)
SAMPLES = 16
SAFETY = 2.0
SEED = 20240541
COTANGENTS = 64  # output elements per backward pass (a batch of rows of the Jacobian)
# Operators a storage arithmetic has no rule for, and why.
STORAGE_REFUSED = {"LRN": "NVDLA's CDP evaluates (bias + alpha / size * S)^-beta from its lookup table "
                          "(pipeline/numerics/nvdla_lut.py lrn_lut); that table's own error has no rule here"}
EXACT_SPREAD = 256  # tensors up to this size read by a softmax get their own bound as spread
REFINED = frozenset({"Softmax", "LogSoftmax"})


class BoundUnavailable(Exception):
    """No bound: BOUND-E001 no rule for an operator or attribute, E002 a data-dependent refusal (a denominator
    whose error may reach 0), E003 a value reaching the storage format's largest value, E004 an operator the
    storage arithmetic has no rule for, E005 a bound that is not finite."""

    def __init__(self, message: str, code: str = "BOUND-E001") -> None:
        super().__init__(message)
        self.code = code


@dataclass
class Bound:
    """One output's bound (arrays of the output's shape) under one arithmetic."""

    value: np.ndarray
    shift: np.ndarray
    deterministic: np.ndarray
    probabilistic: np.ndarray
    remainder: np.ndarray
    sigma: np.ndarray


@dataclass
class Report:
    """What one run measured besides the bounds: decisions near their margin, the largest spread."""

    undecided: dict[str, int] = field(default_factory=dict)
    decisions: int = 0


class _Accumulator:
    def __init__(self, batch: int) -> None:
        self.det = np.zeros(batch)
        self.var = np.zeros(batch)
        self.shift = np.zeros(batch)
        self.rem = np.zeros(batch)

    @staticmethod
    def _flat(a: np.ndarray, batch: int) -> np.ndarray:
        return a.reshape(batch, -1)

    def local(self, g: np.ndarray, source: Local) -> None:
        batch = g.shape[0]
        d = np.broadcast_to(source.d, g.shape[1:])
        q = np.broadcast_to(source.q, g.shape[1:])
        gf = self._flat(g, batch)
        self.det += np.abs(gf) @ d.ravel()
        self.var += np.square(gf) @ np.square(q).ravel()

    def shared(self, coef: np.ndarray, d: np.ndarray, q: np.ndarray) -> None:
        batch = coef.shape[0]
        d = np.broadcast_to(d, coef.shape[1:])
        q = np.broadcast_to(q, coef.shape[1:])
        cf = self._flat(coef, batch)
        self.det += np.abs(cf) @ d.ravel()
        self.var += np.square(cf) @ np.square(q).ravel()

    def known(self, coef: np.ndarray, delta: np.ndarray) -> None:
        batch = coef.shape[0]
        self.shift += self._flat(coef, batch) @ np.broadcast_to(delta, coef.shape[1:]).ravel()

    def remainder(self, g: np.ndarray, rho: np.ndarray) -> None:
        batch = g.shape[0]
        self.rem += np.abs(self._flat(g, batch)) @ np.broadcast_to(rho, g.shape[1:]).ravel()


class _Gathered:
    """What one cotangent g contributes to the accumulators, gathered so that |g|, g^2 and g are each read once:
    one matrix product per kind over every arithmetic's vectors (the backward pass is memory-bound)."""

    def __init__(self, g: np.ndarray) -> None:
        self.g = g
        self.abs: list[tuple[_Accumulator, str, np.ndarray]] = []
        self.sq: list[tuple[_Accumulator, np.ndarray]] = []
        self.lin: list[tuple[_Accumulator, np.ndarray]] = []

    def local(self, acc: _Accumulator, source: Local) -> None:
        self.abs.append((acc, "det", source.d))
        self.sq.append((acc, np.square(source.q)))

    def remainder(self, acc: _Accumulator, rho: np.ndarray) -> None:
        self.abs.append((acc, "rem", rho))

    def known(self, acc: _Accumulator, delta: np.ndarray) -> None:
        self.lin.append((acc, delta))

    def flush(self) -> None:
        batch, shape = self.g.shape[0], self.g.shape[1:]
        gf = self.g.reshape(batch, -1)

        def columns(vectors: list[np.ndarray]) -> np.ndarray:
            return np.stack([np.broadcast_to(v, shape).ravel() for v in vectors], axis=1)

        if self.abs:
            sums = np.abs(gf) @ columns([v for _, _, v in self.abs])
            for j, (acc, kind, _) in enumerate(self.abs):
                setattr(acc, kind, getattr(acc, kind) + sums[:, j])
        if self.sq:
            sums = np.square(gf) @ columns([v for _, v in self.sq])
            for j, (acc, _) in enumerate(self.sq):
                acc.var += sums[:, j]
        if self.lin:
            sums = gf @ columns([v for _, v in self.lin])
            for j, (acc, _) in enumerate(self.lin):
                acc.shift += sums[:, j]


def _magnitude(x: np.ndarray) -> np.ndarray:
    """|x|, with 0 at an attention mask's -inf (pipeline/nnef/masks.py: a constant -inf reaching only softmaxes
    through Add, Where and storage-only operations; exact in every evaluation and storage format, issue 38)."""
    x = np.asarray(x, np.float64)
    return np.where(np.isneginf(x), 0.0, np.abs(x))


def _stored_delta(storage: Any, x: np.ndarray) -> np.ndarray:
    """The known error of storing the exact value x (0 at a mask's -inf, stored as -inf)."""
    x = np.asarray(x, np.float64)
    return np.where(np.isneginf(x), 0.0, storage.round(x) - x)


def _normal(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Standard normal draws (float32: half the cost; they only estimate the spreads)."""
    return rng.standard_normal(shape, dtype=np.float32)


def _add(grads: dict[str, np.ndarray], name: str, value: np.ndarray | None) -> None:
    if value is None or not name:
        return
    grads[name] = grads[name] + value if name in grads else value


class Sensitivity:
    """The bounds of one or more arithmetics on one model (module docstring).

    `placement(op) -> Arithmetic | None` chooses, for mixed deployments, another arithmetic for some
    operations (a DLA item's in FP16 next to CPU items in float32): a tensor crossing into a storage
    format is rounded to it there."""

    def __init__(self, model: onnx.ModelProto | Graph, arithmetics: Sequence[Arithmetic],
                 placement: Callable[[Op], str | None] | None = None,
                 placed: Mapping[str, Arithmetic] | None = None) -> None:
        try:
            self.graph = model if isinstance(model, Graph) else prepare(model)
            for op in self.graph.ops:
                rule_of(op)
        except (GraphRefused, NoRule) as error:
            raise BoundUnavailable(str(error), getattr(error, "code", "BOUND-E001")) from None
        self.arithmetics = list(arithmetics)
        self.placement = placement
        self.placed = dict(placed or {})
        self.ctx = Context(self.graph)
        self.producer = {name: i for i, op in enumerate(self.graph.ops) for name in op.outputs if name}
        for arithmetic in self.arithmetics:
            for op in self.graph.ops:
                placed = self._arith(op, arithmetic)
                if placed.storage is not None and op.source in STORAGE_REFUSED:
                    raise BoundUnavailable(f"{op.source} (node '{op.origin}') under {placed.name}: "
                                           f"{STORAGE_REFUSED[op.source]}", "BOUND-E004")

    def _all(self) -> list[Arithmetic]:
        return self.arithmetics + list(self.placed.values())

    def _arith(self, op: Op, default: Arithmetic) -> Arithmetic:
        if self.placement is None:
            return default
        key = self.placement(op)
        return self.placed.get(key, default) if key else default

    # --- forward ------------------------------------------------------------------------------------

    def _forward(self, inputs: Mapping[str, np.ndarray]) -> tuple[dict[str, Any], list[Step]]:
        env: dict[str, Any] = {}
        for name, value in self.graph.constants.items():
            value = np.asarray(value)
            env[name] = value.astype(np.float64) if value.dtype.kind == "f" else value
        for name, real in self.graph.reals.items():
            env[name] = np.float64(real.value)
        for name, value in inputs.items():
            env[name] = np.asarray(value, np.float32).astype(np.float64)
        steps: list[Step] = []
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            for op in self.graph.ops:
                ins = [env[name] if name else None for name in op.inputs]
                try:
                    step = rule_of(op).linearize(op, ins, self.ctx)
                except NoRule as error:
                    raise BoundUnavailable(str(error), error.code) from None
                steps.append(step)
                for name, value in zip(op.outputs, step.outputs):
                    if name:
                        env[name] = value
        return env, steps

    def _float(self, env: Mapping[str, Any], name: str) -> bool:
        value = env.get(name)
        return value is not None and np.asarray(value).dtype.kind == "f"

    def _constant(self, name: str) -> bool:
        return self.graph.is_constant(name)

    # --- storage crossings ----------------------------------------------------------------------------

    def _stored(self, op: Op, arithmetic: Arithmetic) -> Arithmetic | None:
        a = self._arith(op, arithmetic)
        return a if a.storage is not None else None

    def _crossing(self, op: Op, k: int, arithmetic: Arithmetic) -> bool:
        """Whether input k of op (in a storage format) comes from outside it: rounded when it crosses."""
        name = op.inputs[k]
        if not name or self._constant(name) or name in self.graph.inputs:
            return False
        producer = self.producer.get(name)
        return producer is None or self._stored(self.graph.ops[producer], arithmetic) is None

    # --- simulation of the spreads ---------------------------------------------------------------------

    def _spreads(self, env: Mapping[str, Any], steps: list[Step], arithmetic: Arithmetic,
                 roundings: dict[int, Rounding], spreads_guess: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        rng = np.random.default_rng(SEED)
        tangents: dict[str, np.ndarray] = {}
        for name in self.graph.inputs:
            if name not in env:
                continue
            consumers = [self.graph.ops[i] for i in self.graph.consumers.get(name, [])]
            stored = [c for c in consumers if self._stored(c, arithmetic) is not None]
            if stored:
                storage = self._stored(stored[0], arithmetic).storage
                delta = _stored_delta(storage, env[name])
                tangents[name] = np.broadcast_to(delta, (SAMPLES,) + np.shape(env[name])).copy()
        for index, (op, step) in enumerate(zip(self.graph.ops, steps)):
            if not all(np.asarray(o).dtype.kind == "f" for o in step.outputs):
                continue
            a = self._arith(op, arithmetic)
            rounding = roundings[index]
            ins: list[np.ndarray | None] = []
            for k, name in enumerate(op.inputs):
                t = tangents.get(name) if name else None
                if name and self._constant(name) and a.storage is not None and rule_of(op).stores_constants \
                        and self._float(env, name):
                    delta = _stored_delta(a.storage, env[name])
                    if np.any(delta):
                        t = np.broadcast_to(delta, (SAMPLES,) + np.shape(env[name])).copy()
                if a.storage is not None and self._crossing(op, k, arithmetic) and self._float(env, name):
                    noise = a.storage.u * (_magnitude(env[name]) + spreads_guess.get(name, 0.0)) + a.storage.tiny
                    t = (0.0 if t is None else t) + _normal(rng, (SAMPLES,) + np.shape(env[name])) * noise
                if k < len(rounding.inputs) and rounding.inputs[k] is not None and self._float(env, name):
                    noise = _normal(rng, (SAMPLES,) + np.shape(env[name])) * rounding.inputs[k].q
                    t = noise if t is None else t + noise
                ins.append(t)
            outs = step.jvp(ins) if any(t is not None for t in ins) else [None] * len(step.outputs)
            outs = list(outs) + [None] * (len(step.outputs) - len(outs))
            for k, (name, value) in enumerate(zip(op.outputs, step.outputs)):
                if not name:
                    continue
                shape = (SAMPLES,) + np.shape(value)
                t = outs[k]
                t = np.zeros(shape) if t is None else np.broadcast_to(t, shape).copy()
                variance = 0.0  # the element's own roundings, drawn at once (a sum of independent normals)
                if k < len(rounding.local) and rounding.local[k] is not None:
                    variance = variance + np.square(rounding.local[k].q)
                if a.storage is not None and not rule_of(op).exact_in_storage:
                    variance = variance + np.square(a.storage.u * _magnitude(value) + a.storage.tiny)
                if np.any(variance):
                    t += _normal(rng, shape) * np.sqrt(variance)
                if k < len(rounding.shift) and rounding.shift[k] is not None:
                    t = t + rounding.shift[k]
                if k == 0:
                    for shared in rounding.shared:
                        if shared.forward is not None:
                            draw = _normal(rng, (SAMPLES,) + np.shape(shared.q)) * shared.q
                            t = t + np.broadcast_to(shared.forward(draw), shape)
                    for _, delta, forward in rounding.known:
                        t = t + np.broadcast_to(forward(np.broadcast_to(delta, (SAMPLES,) + np.shape(delta))), shape)
                tangents[name] = t
        spreads = {}
        for name, t in tangents.items():
            spreads[name] = LAMBDA * SAFETY * np.sqrt(np.mean(np.square(t), axis=0))
        return spreads

    # --- the bound ---------------------------------------------------------------------------------------

    def run(self, inputs: Mapping[str, np.ndarray]) -> tuple[dict[str, dict[str, Bound]], dict[str, Report]]:
        """{arithmetic name: {output: Bound}} and {arithmetic name: Report}. The spreads are simulated once, with
        the last arithmetic (the one whose roundings include the others': onnxruntime's after the reference's);
        one backward pass serves every arithmetic."""
        with single_thread(), np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            env, steps = self._forward(inputs)
            dominant = self.arithmetics[-1]
            first = self._roundings(env, steps, dominant, {})
            spreads = self._spreads(env, steps, dominant, first, {})
            spreads = self._refine(env, steps, dominant, spreads)
            roundings = {a.name: self._roundings(env, steps, a, spreads) for a in self.arithmetics}
            remainders, reports = {}, {}
            for a in self.arithmetics:
                remainders[a.name], reports[a.name] = self._remainders(steps, a, spreads)
            return self._bounds(env, steps, roundings, remainders), reports

    def _refine(self, env: Mapping[str, Any], steps: list[Step], arithmetic: Arithmetic,
                spreads: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The spread of every small tensor (at most EXACT_SPREAD elements) read by a softmax: its own bound,
        computed like an output's (backward passes from it), instead of the simulation's estimate times SAFETY:
        a softmax's remainder is second order in its logits' spread, and the logits' errors are the network's."""
        small = []
        for index, op in enumerate(self.graph.ops):
            if op.op_type not in REFINED:
                continue
            for name in op.inputs:
                if (name and name not in small and not self._constant(name) and name not in self.graph.inputs
                        and self._float(env, name) and 0 < np.size(env[name]) <= EXACT_SPREAD):
                    small.append(name)
        if not small:
            return spreads
        roundings = {arithmetic.name: self._roundings(env, steps, arithmetic, spreads)}
        remainders = {arithmetic.name: self._remainders(steps, arithmetic, spreads)[0]}
        refined = dict(spreads)
        for name in small:
            value = np.asarray(env[name], np.float64)
            acc = self._backward(env, steps, roundings, remainders, name, 0, value.size, [arithmetic])[arithmetic.name]
            exact_bound = np.abs(acc.shift) + np.minimum(LAMBDA * np.sqrt(acc.var), acc.det) + acc.rem
            refined[name] = exact_bound.reshape(value.shape)
        return refined

    def _roundings(self, env: Mapping[str, Any], steps: list[Step], arithmetic: Arithmetic,
                   spreads: Mapping[str, np.ndarray]) -> dict[int, Rounding]:
        out: dict[int, Rounding] = {}
        for index, (op, step) in enumerate(zip(self.graph.ops, steps)):
            spread = Spread([spreads.get(name) if name else None for name in op.inputs],
                            [spreads.get(name) for name in op.outputs])
            try:
                out[index] = step.rounding(self._arith(op, arithmetic), spread)
            except NoRule as error:
                raise BoundUnavailable(str(error), error.code) from None
        return out

    def _remainders(self, steps: list[Step], arithmetic: Arithmetic,
                    spreads: Mapping[str, np.ndarray]) -> tuple[dict[int, list[np.ndarray | None]], Report]:
        report = Report()
        remainders: dict[int, list[np.ndarray | None]] = {}
        for index, (op, step) in enumerate(zip(self.graph.ops, steps)):
            spread = Spread([spreads.get(name) if name else None for name in op.inputs],
                            [spreads.get(name) for name in op.outputs])
            try:
                remainders[index] = step.remainder(spread, self._arith(op, arithmetic))
            except NoRule as error:
                raise BoundUnavailable(str(error), error.code) from None
            near, total = step.decisions(spread)
            report.decisions += total
            if near:
                report.undecided[op.origin] = report.undecided.get(op.origin, 0) + near
            if self._arith(op, arithmetic).storage is not None:
                storage = self._arith(op, arithmetic).storage
                for name, value in zip(op.outputs, step.outputs):
                    if name and np.asarray(value).dtype.kind == "f" and value.size and \
                            float(np.max(_magnitude(value) + spreads.get(name, 0.0))) >= storage.max:
                        raise BoundUnavailable(f"'{name}' (node '{op.origin}', {op.op_type}) reaches "
                                               f"{float(np.max(_magnitude(value))):.6g} (+ its spread) >= {storage.name}'s "
                                               f"largest {storage.max:g}", "BOUND-E003")
        return remainders, report

    def _bounds(self, env: dict[str, Any], steps: list[Step], roundings: Mapping[str, dict[int, Rounding]],
                remainders: Mapping[str, dict[int, list[np.ndarray | None]]]) -> dict[str, dict[str, Bound]]:
        out: dict[str, dict[str, Bound]] = {a.name: {} for a in self.arithmetics}
        for output in self.graph.outputs:
            value = np.asarray(env[output], np.float64)
            n = value.size
            acc = {a.name: {key: np.zeros(n) for key in ("det", "var", "shift", "rem")} for a in self.arithmetics}
            for start in range(0, n, COTANGENTS):
                stop = min(n, start + COTANGENTS)
                parts = self._backward(env, steps, roundings, remainders, output, start, stop)
                for name, part in parts.items():
                    for key in acc[name]:
                        acc[name][key][start:stop] = getattr(part, key)
            for a in self.arithmetics:
                sums = acc[a.name]
                shape = value.shape
                sigma = np.sqrt(sums["var"])
                det = sums["det"] + sums["rem"] + np.abs(sums["shift"])
                # Hoeffding's bound, or the sum of the magnitudes where that is smaller (a few sources)
                prob = np.abs(sums["shift"]) + np.minimum(LAMBDA * sigma, sums["det"]) + sums["rem"]
                if not np.all(np.isfinite(prob)):
                    raise BoundUnavailable(f"the bound of '{output}' under {a.name} is not finite", "BOUND-E005")
                out[a.name][output] = Bound(value, sums["shift"].reshape(shape), det.reshape(shape),
                                            prob.reshape(shape), sums["rem"].reshape(shape), sigma.reshape(shape))
        return out

    def _backward(self, env: Mapping[str, Any], steps: list[Step], roundings: Mapping[str, dict[int, Rounding]],
                  remainders: Mapping[str, dict[int, list[np.ndarray | None]]], output: str, start: int,
                  stop: int, arithmetics: list[Arithmetic] | None = None) -> dict[str, _Accumulator]:
        """One backward pass (rows start..stop of the Jacobian of tensor `output`) accumulating every arithmetic's
        sums."""
        arithmetics = arithmetics or self.arithmetics
        value = np.asarray(env[output], np.float64)
        batch = stop - start
        seed = np.zeros((batch, value.size))
        seed[np.arange(batch), np.arange(start, stop)] = 1.0
        grads: dict[str, np.ndarray] = {output: seed.reshape((batch,) + value.shape)}
        accs = {a.name: _Accumulator(batch) for a in arithmetics}
        for index in range(len(self.graph.ops) - 1, -1, -1):
            op, step = self.graph.ops[index], steps[index]
            outs = [grads.pop(name, None) if name else None for name in op.outputs]
            if all(g is None for g in outs):
                continue
            rule = rule_of(op)
            placed = {a.name: self._arith(op, a) for a in arithmetics}
            gathered = [None if g is None else _Gathered(g) for g in outs]
            for arithmetic in arithmetics:
                a, acc, rounding = placed[arithmetic.name], accs[arithmetic.name], roundings[arithmetic.name][index]
                for k, gk in enumerate(gathered):
                    if gk is None:
                        continue
                    if k < len(rounding.local) and rounding.local[k] is not None:
                        gk.local(acc, rounding.local[k])
                    if k < len(rounding.shift) and rounding.shift[k] is not None:
                        gk.known(acc, rounding.shift[k])
                    rho = remainders[arithmetic.name][index]
                    rho = rho[k] if k < len(rho) else None
                    if rho is not None:
                        gk.remainder(acc, rho)
                    if a.storage is not None and not rule.exact_in_storage:
                        stored = a.storage.u * _magnitude(step.outputs[k]) + a.storage.tiny
                        gk.local(acc, Local(stored, stored))
                for shared in rounding.shared:
                    acc.shared(shared.coefficient(outs), shared.d, shared.q)
                for coefficient, delta, _ in rounding.known:
                    acc.known(coefficient(outs), delta)
            for gk in gathered:
                if gk is not None:
                    gk.flush()
            need = []
            for k, name in enumerate(op.inputs):
                floating = bool(name) and self._float(env, name)
                constant = bool(name) and self._constant(name)
                stored = any(p.storage is not None for p in placed.values()) and rule.stores_constants
                wanted = floating and (not constant or stored)
                wanted = wanted or any(k < len(roundings[a.name][index].inputs)
                                       and roundings[a.name][index].inputs[k] is not None for a in arithmetics)
                need.append(wanted)
            if not any(need):
                continue
            g_ins = step.vjp(outs, need)
            for k, name in enumerate(op.inputs):
                g = g_ins[k] if k < len(g_ins) else None
                if g is None or not name:
                    continue
                gk = _Gathered(g)
                for arithmetic in arithmetics:
                    a, acc, rounding = placed[arithmetic.name], accs[arithmetic.name], roundings[arithmetic.name][index]
                    if k < len(rounding.inputs) and rounding.inputs[k] is not None:
                        gk.local(acc, rounding.inputs[k])
                    if self._constant(name):
                        if a.storage is not None and rule.stores_constants and self._float(env, name):
                            gk.known(acc, _stored_delta(a.storage, env[name]))
                        continue
                    if a.storage is not None and self._crossing(op, k, arithmetic):
                        stored = a.storage.u * _magnitude(env[name]) + a.storage.tiny
                        gk.local(acc, Local(stored, stored))
                    if name in self.graph.inputs and a.storage is not None:
                        gk.known(acc, _stored_delta(a.storage, env[name]))
                gk.flush()
                if self._constant(name) or name in self.graph.inputs:
                    continue
                _add(grads, name, g)
        return accs
