"""GRU and LSTM with a static sequence length, unrolled at export into NNEF operations.

NNEF has no recurrent operation; with every extent static, a recurrent layer is its time steps
written out: for each step t (in time order, reversed for the backward direction) the gates are
`linear` products of the step's input and of the previous hidden state with the gate's weight
rows, the element-wise gate arithmetic follows ONNX's equations, and the outputs are assembled by
`unsqueeze` and `concat`. The weights of each gate are the rows of W, R and B the ONNX operator
defines for it (stored as their own variables, traced to the operator's initializer). The order of
every sum is ours and written out (docs/export.md, "Recurrent layers"): a gate's pre-activation is
`(x_t W_g^T + Wb_g) + (h W'_g^T + Rb_g)`, each `linear` summing from +0 in increasing k with its
bias last. onnxruntime sums in another order; the export validation compares the two within the
tolerance, and tests/networks/test_recurrent.py checks the unrolling against onnxruntime on
forward, reverse and bidirectional layers, both GRU reset modes, given and zero initial states.

layout 1 (batch first: X [batch, seq, input], Y [batch, seq, directions, hidden], states [batch,
directions, hidden]) reads and writes the same steps on the other axes. Refused with EXPORT-E004:
sequence_lens other than the full length, activations other than the defaults (Sigmoid, Tanh, Tanh),
clip, LSTM input_forget.
"""

from __future__ import annotations

import numpy as np

from pipeline.export.context import ExportContext, TensorName
from pipeline.export.onnx_model import Node
from pipeline.export.converters import converter

DEFAULT_ACTIVATIONS = {"GRU": ["Sigmoid", "Tanh"], "LSTM": ["Sigmoid", "Tanh", "Tanh"]}


def _check(ctx: ExportContext, node: Node, seq: int, batch: int) -> list[str]:
    """The directions to unroll; refuses what the unrolling does not implement."""
    if int(node.attr("layout", 0)) not in (0, 1):
        raise ctx.fail("EXPORT-E004", f"layout = {node.attr('layout')} (ONNX defines 0 and 1)")
    if node.attr("clip") is not None:
        raise ctx.fail("EXPORT-E004", "clip is not supported")
    if int(node.attr("input_forget", 0)):
        raise ctx.fail("EXPORT-E004", "input_forget = 1 is not supported")
    if node.attr("activation_alpha") is not None or node.attr("activation_beta") is not None:
        raise ctx.fail("EXPORT-E004", "activation_alpha / activation_beta are not supported")
    direction = node.attr("direction", "forward")
    directions = {"forward": ["forward"], "reverse": ["reverse"], "bidirectional": ["forward", "reverse"]}.get(direction)
    if directions is None:
        raise ctx.fail("EXPORT-E004", f"direction '{direction}'")
    activations = [a.decode() if isinstance(a, bytes) else str(a) for a in node.attr("activations", []) or []]
    if activations and activations != DEFAULT_ACTIVATIONS[node.op_type] * len(directions):
        raise ctx.fail("EXPORT-E004", f"activations {activations}: only the defaults "
                       f"{DEFAULT_ACTIVATIONS[node.op_type]} are supported")
    if ctx.has_input(4):
        lengths = ctx.ints(4, "sequence_lens")
        if any(n != seq for n in lengths) or len(lengths) != batch:
            raise ctx.fail("EXPORT-E004", f"sequence_lens {lengths}: only the full length {seq} for every "
                           "sequence is supported (static sequence length)")
    return directions


class _Unroller:
    """Names and statements of one recurrent node being unrolled."""

    def __init__(self, ctx: ExportContext, node: Node, gates: int) -> None:
        self.ctx, self.node = ctx, node
        self.batch_first = int(node.attr("layout", 0)) == 1
        shape = ctx.in_shape(0)
        self.seq, self.batch, self.inputs = (shape[1], shape[0], shape[2]) if self.batch_first else shape
        self.hidden = int(node.attr("hidden_size", 0)) or ctx.in_shape(2)[-1]
        self.w = ctx.constant(1, "W")
        self.r = ctx.constant(2, "R")
        self.b = ctx.constant(3, "B") if ctx.has_input(3) else None
        h = self.hidden
        if self.w.shape[1:] != (gates * h, self.inputs) or self.r.shape[1:] != (gates * h, h):
            raise ctx.fail("EXPORT-E004", f"W {list(self.w.shape)} or R {list(self.r.shape)} do not fit "
                           f"{gates} gates of hidden_size {h} and input size {self.inputs}")
        self.x = ctx.input(0)
        self.steps: dict[int, TensorName] = {}

    def constant(self, what: str, value: np.ndarray) -> TensorName:
        """A variable holding `value`, rows of one of the node's initializers (provenance: this node)."""
        key = f"{self.node.outputs[0] or self.node.label}__{what}"
        self.ctx.define_constant(key, np.ascontiguousarray(value, np.float32))
        return self.ctx.variable(key)

    def gate_weights(self, d: int, gate: int, name: str) -> tuple[TensorName, TensorName, object, object]:
        """W_g [H, I], R_g [H, H], Wb_g, Rb_g ([1, H] variables, or 0.0 without B) of gate row block `gate`."""
        h = self.hidden
        rows = slice(gate * h, (gate + 1) * h)
        w = self.constant(f"W{d}_{name}", self.w[d, rows])
        r = self.constant(f"R{d}_{name}", self.r[d, rows])
        if self.b is None:
            return w, r, 0.0, 0.0
        count = self.w.shape[1]
        wb = self.constant(f"Wb{d}_{name}", self.b[d, rows].reshape(1, h))
        rb = self.constant(f"Rb{d}_{name}", self.b[d, count + rows.start:count + rows.stop].reshape(1, h))
        return w, r, wb, rb

    def state(self, index: int, d: int, what: str) -> TensorName:
        """The initial state of direction d ([B, H]): input `index` (a constant, or a computed tensor
        squeezed), else a constant zero."""
        ctx = self.ctx
        if not ctx.has_input(index):
            return self.constant(f"{what}0_{d}", np.zeros((self.batch, self.hidden), np.float32))
        axis = 1 if self.batch_first else 0
        if ctx.is_constant(index):
            return self.constant(f"{what}0_{d}", np.take(ctx.constant(index, what), d, axis=axis))
        source = ctx.input(index)
        part = ctx.temp_for(f"{what}0_slice{d}")
        ctx.emit(part, "slice", source, axes=[axis], begin=[d], end=[d + 1], stride=[1])
        out = ctx.temp_for(f"{what}0_{d}")
        ctx.emit(out, "squeeze", part, axes=[axis])
        return out

    def step_input(self, t: int) -> TensorName:
        """x_t [B, I] (shared by both directions)."""
        if t not in self.steps:
            axis = 1 if self.batch_first else 0
            part = self.ctx.temp_for(f"x{t}_slice")
            self.ctx.emit(part, "slice", self.x, axes=[axis], begin=[t], end=[t + 1], stride=[1])
            self.steps[t] = self.ctx.temp_for(f"x{t}")
            self.ctx.emit(self.steps[t], "squeeze", part, axes=[axis])
        return self.steps[t]

    def emit(self, op: str, *args: object, hint: str, **named: object) -> TensorName:
        target = self.ctx.temp_for(hint)
        self.ctx.emit(target, op, *args, **named)
        return target

    def pre_activation(self, x: TensorName, h: TensorName, gate: tuple, hint: str) -> TensorName:
        """(x W_g^T + Wb_g) + (h R_g^T + Rb_g)."""
        w, r, wb, rb = gate
        xw = self.emit("linear", x, w, wb, hint=f"{hint}_x")
        hr = self.emit("linear", h, r, rb, hint=f"{hint}_h")
        return self.emit("add", xw, hr, hint=hint)

    def outputs(self, sequences: list[list[TensorName]], finals: list[list[TensorName]]) -> None:
        """Y [seq, dirs, B, H] from each direction's h per time step, and each final state [dirs, B, H]
        (layout 1: Y [B, seq, dirs, H], states [B, dirs, H]). An output that is named but read by no
        converted node and no graph output (torch names Y_h and Y_c always) is dropped, not written."""
        ctx, node = self.ctx, self.node
        time_axis, dir_axis = (1, 2) if self.batch_first else (0, 1)
        for index in range(len(node.outputs)):
            if node.has_output(index) and not ctx.wanted(index):
                ctx.drop(index)
        if ctx.wanted(0):
            per_time = []
            for t in range(self.seq):
                parts = [self.emit("unsqueeze", hs[t], axes=[time_axis, dir_axis], hint=f"y{t}_{d}")
                         for d, hs in enumerate(sequences)]
                per_time.append(parts[0] if len(parts) == 1 else self.emit("concat", parts, axis=dir_axis, hint=f"y{t}"))
            if len(per_time) == 1:
                ctx.emit(ctx.output(0), "copy", per_time[0])
            else:
                ctx.emit(ctx.output(0), "concat", per_time, axis=time_axis)
        state_axis = 1 if self.batch_first else 0
        for index, states in enumerate(finals, start=1):
            if not ctx.wanted(index):
                continue
            parts = [self.emit("unsqueeze", s, axes=[state_axis], hint=f"final{index}_{d}") for d, s in enumerate(states)]
            if len(parts) == 1:
                ctx.emit(ctx.output(index), "copy", parts[0])
            else:
                ctx.emit(ctx.output(index), "concat", parts, axis=state_axis)


def _times(direction: str, seq: int) -> list[int]:
    return list(range(seq)) if direction == "forward" else list(range(seq - 1, -1, -1))


@converter("GRU", versions=(7, 14, 22), attributes=("activation_alpha", "activation_beta", "activations", "clip",
                                                    "direction", "hidden_size", "layout", "linear_before_reset"))
def gru(ctx: ExportContext, node: Node) -> None:
    """GRU(X, W, R, B, sequence_lens, initial_h), static length, unrolled -> per step t and direction:
    z = sigmoid(add(linear(x_t, W_z, Wb_z), linear(h, R_z, Rb_z))); r likewise;
    linear_before_reset = 1: n = tanh(add(linear(x_t, W_h, Wb_h), mul(r, linear(h, R_h, Rb_h))));
    linear_before_reset = 0: n = tanh(add(linear(x_t, W_h, Wb_h), linear(mul(r, h), R_h, Rb_h)));
    h' = add(mul(sub(1.0, z), n), mul(z, h)) (ONNX's (1 - z) . n + z . h); Y = concat over t of
    unsqueeze(h'), Y_h = the last step's h' (module docstring; gate rows z, r, h as ONNX orders them)."""
    u = _Unroller(ctx, node, 3)
    seq = u.seq
    directions = _check(ctx, node, seq, u.batch)
    reset_first = int(node.attr("linear_before_reset", 0)) != 0
    sequences, finals = [], []
    for d, direction in enumerate(directions):
        gates = [u.gate_weights(d, g, name) for g, name in enumerate("zrh")]
        h = u.state(5, d, "h")
        hs: dict[int, TensorName] = {}
        for t in _times(direction, seq):
            x = u.step_input(t)
            p = f"d{d}t{t}"
            z = u.emit("sigmoid", u.pre_activation(x, h, gates[0], f"{p}_z_in"), hint=f"{p}_z")
            r = u.emit("sigmoid", u.pre_activation(x, h, gates[1], f"{p}_r_in"), hint=f"{p}_r")
            w, rr, wb, rb = gates[2]
            xw = u.emit("linear", x, w, wb, hint=f"{p}_n_x")
            if reset_first:
                hr = u.emit("mul", r, u.emit("linear", h, rr, rb, hint=f"{p}_n_h"), hint=f"{p}_n_rh")
            else:
                hr = u.emit("linear", u.emit("mul", r, h, hint=f"{p}_rh"), rr, rb, hint=f"{p}_n_rh")
            n = u.emit("tanh", u.emit("add", xw, hr, hint=f"{p}_n_in"), hint=f"{p}_n")
            keep = u.emit("mul", u.emit("sub", 1.0, z, hint=f"{p}_1mz"), n, hint=f"{p}_new")
            h = u.emit("add", keep, u.emit("mul", z, h, hint=f"{p}_old"), hint=f"{p}_h")
            hs[t] = h
        sequences.append([hs[t] for t in range(seq)])
        finals.append(h)
    u.outputs(sequences, [finals])


@converter("LSTM", versions=(7, 14, 22), attributes=("activation_alpha", "activation_beta", "activations", "clip",
                                                      "direction", "hidden_size", "input_forget", "layout"))
def lstm(ctx: ExportContext, node: Node) -> None:
    """LSTM(X, W, R, B, sequence_lens, initial_h, initial_c, P), static length, unrolled -> per step t and
    direction: i = sigmoid(add(add(linear(x_t, W_i, Wb_i), linear(h, R_i, Rb_i)), mul(P_i, c))) (the
    peephole term only with P), f likewise with P_f, g = tanh(add(linear(x_t, W_c, Wb_c), linear(h, R_c,
    Rb_c))); c' = add(mul(f, c), mul(i, g)); o = sigmoid(... + mul(P_o, c')); h' = mul(o, tanh(c'));
    Y = concat over t of unsqueeze(h'), Y_h and Y_c the last step's (gate rows i, o, f, c as ONNX orders
    them; module docstring)."""
    u = _Unroller(ctx, node, 4)
    seq = u.seq
    directions = _check(ctx, node, seq, u.batch)
    peephole = ctx.constant(7, "P") if ctx.has_input(7) else None
    sequences, h_finals, c_finals = [], [], []
    for d, direction in enumerate(directions):
        gates = {name: u.gate_weights(d, g, name) for g, name in enumerate("iofc")}
        peep = {}
        if peephole is not None:
            for k, name in enumerate("iof"):
                peep[name] = u.constant(f"P{d}_{name}", peephole[d, k * u.hidden:(k + 1) * u.hidden].reshape(1, -1))
        h, c = u.state(5, d, "h"), u.state(6, d, "c")
        hs: dict[int, TensorName] = {}
        for t in _times(direction, seq):
            x = u.step_input(t)
            p = f"d{d}t{t}"

            def gate(name: str, cell: TensorName) -> TensorName:
                total = u.pre_activation(x, h, gates[name], f"{p}_{name}_in")
                if name in peep:
                    total = u.emit("add", total, u.emit("mul", peep[name], cell, hint=f"{p}_{name}_peep"),
                                   hint=f"{p}_{name}_sum")
                return u.emit("sigmoid", total, hint=f"{p}_{name}")

            i, f = gate("i", c), gate("f", c)
            g = u.emit("tanh", u.pre_activation(x, h, gates["c"], f"{p}_g_in"), hint=f"{p}_g")
            c = u.emit("add", u.emit("mul", f, c, hint=f"{p}_fc"), u.emit("mul", i, g, hint=f"{p}_ig"), hint=f"{p}_c")
            o = gate("o", c)
            h = u.emit("mul", o, u.emit("tanh", c, hint=f"{p}_tc"), hint=f"{p}_h")
            hs[t] = h
        sequences.append([hs[t] for t in range(seq)])
        h_finals.append(h)
        c_finals.append(c)
    u.outputs(sequences, [h_finals, c_finals])
