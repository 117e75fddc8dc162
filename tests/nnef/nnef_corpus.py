"""A generated corpus of NNEF descriptions: one graph per standard operation, compound
documents, multi-item documents, and invalid variants.

Every standard fragment of NNEF 1.0.5 gets a graph invoking it with every parameter
written out (so the graphs also pass the certification profile), with tensors declared
by `external`. The texts are written by us from the specification; nothing is copied
from the Khronos repositories.
"""

from __future__ import annotations

from dataclasses import dataclass

HEADER = "version 1.0;\n\n"


@dataclass(frozen=True)
class Case:
    name: str
    text: str


def _graph(inputs: dict[str, tuple[str, list[int]]], body: list[str], outputs: list[str]) -> str:
    params = ", ".join(inputs)
    lines = [f"graph G( {params} ) -> ( {', '.join(outputs)} )", "{"]
    for name, (dtype, shape) in inputs.items():
        lines.append(f"    {name} = external<{dtype}>(shape = {shape});")
    lines += [f"    {line}" for line in body]
    lines.append("}")
    return HEADER + "\n".join(lines) + "\n"


S = "scalar"
I = "integer"
L = "logical"

WINDOW_2D = ("border = 'constant', padding = [(0, 0), (0, 0), (1, 1), (1, 1)], "
             "stride = [1, 1, 1, 1], dilation = [1, 1, 1, 1]")
CONV_2D = "border = 'constant', padding = [(1, 1), (1, 1)], stride = [1, 1], dilation = [1, 1]"

X23 = {"x": (S, [2, 3])}
XY23 = {"x": (S, [2, 3]), "y": (S, [2, 3])}
IMG = {"x": (S, [1, 2, 8, 8])}

# op -> (external inputs, body lines, graph outputs)
OPERATION_CASES: dict[str, tuple[dict[str, tuple[str, list[int]]], list[str], list[str]]] = {
    "external": (X23, ["y = copy(x);"], ["y"]),
    "variable": (X23, ["v = variable<scalar>(shape = [2, 3], label = 'v');", "y = add(x, v);"], ["y"]),
    "constant": (X23, ["c = constant<scalar>(shape = [2, 3], value = [1.5]);", "y = mul(x, c);"], ["y"]),
    "update": (X23, ["v = variable<scalar>(shape = [2, 3], label = 'v');", "y = update(v, x);"], ["y"]),
    "reshape": ({"x": (S, [2, 3, 4])}, ["y = reshape(x, shape = [6], axis_start = 0, axis_count = 2);"], ["y"]),
    "transpose": ({"x": (S, [2, 3, 4])}, ["y = transpose(x, axes = [2, 0, 1]);"], ["y"]),
    "concat": ({"a": (S, [2, 3]), "b": (S, [2, 5])}, ["y = concat([a, b], axis = 1);"], ["y"]),
    "split": ({"x": (S, [2, 6])}, ["[y1, y2] = split(x, axis = 1, ratios = [1, 2]);"], ["y1", "y2"]),
    "slice": ({"x": (S, [4, 6])}, ["y = slice(x, axes = [0, 1], begin = [1, 0], end = [3, -1], stride = [1, 1]);"], ["y"]),
    "squeeze": ({"x": (S, [2, 1, 3])}, ["y = squeeze(x, axes = [1]);"], ["y"]),
    "unsqueeze": (X23, ["y = unsqueeze(x, axes = [0]);"], ["y"]),
    "stack": ({"a": (S, [2, 3]), "b": (S, [2, 3])}, ["y = stack([a, b], axis = 0);"], ["y"]),
    "unstack": (X23, ["[y1, y2] = unstack(x, axis = 0);"], ["y1", "y2"]),
    "tile": (X23, ["y = tile(x, repeats = [2, 1]);"], ["y"]),
    "pad": ({"x": (S, [1, 2, 4, 4])}, ["y = pad(x, padding = [(0, 0), (0, 0), (1, 1), (2, 0)], border = 'constant', value = 0.0);"], ["y"]),
    "gather": ({"x": (S, [5, 3]), "i": (I, [2])}, ["y = gather(x, i, axis = 0);"], ["y"]),
    "cast": (X23, ["y = cast<integer>(x);"], ["y"]),
    "select": ({"c": (L, [2, 3]), "x": (S, [2, 3]), "y": (S, [2, 3])}, ["z = select(c, x, y);"], ["z"]),
    "clamp": ({"x": (S, [2, 3]), "a": (S, [2, 3]), "b": (S, [2, 3])}, ["y = clamp(x, a, b);"], ["y"]),
    "matmul": ({"a": (S, [2, 3]), "b": (S, [3, 4])}, ["y = matmul(a, b, transposeA = false, transposeB = false);"], ["y"]),
    "conv": ({"x": (S, [1, 2, 8, 8]), "f": (S, [4, 2, 3, 3]), "b": (S, [1, 4])},
             [f"y = conv(x, f, b, {CONV_2D}, groups = 1);"], ["y"]),
    "deconv": ({"x": (S, [1, 4, 8, 8]), "f": (S, [4, 2, 3, 3]), "b": (S, [1, 2])},
               [f"y = deconv(x, f, b, {CONV_2D}, output_shape = [], groups = 1);"], ["y"]),
    "box": (IMG, [f"y = box(x, size = [1, 1, 3, 3], {WINDOW_2D}, normalize = false);"], ["y"]),
    "debox": (IMG, [f"y = debox(x, size = [1, 1, 3, 3], {WINDOW_2D}, output_shape = [], normalize = false);"], ["y"]),
    "argmax_pool": (IMG, [f"y = argmax_pool(x, size = [1, 1, 3, 3], {WINDOW_2D});"], ["y"]),
    "sample": ({"x": (S, [1, 2, 8, 8]), "i": (I, [1, 2, 8, 8])},
               [f"y = sample(x, i, size = [1, 1, 3, 3], {WINDOW_2D});"], ["y"]),
    "desample": ({"x": (S, [1, 2, 8, 8]), "i": (I, [1, 2, 8, 8])},
                 [f"y = desample(x, i, size = [1, 1, 3, 3], {WINDOW_2D}, output_shape = []);"], ["y"]),
    "nearest_downsample": (IMG, ["y = nearest_downsample(x, factor = [2, 2]);"], ["y"]),
    "area_downsample": (IMG, ["y = area_downsample(x, factor = [2, 2]);"], ["y"]),
    "nearest_upsample": (IMG, ["y = nearest_upsample(x, factor = [2, 2]);"], ["y"]),
    "multilinear_upsample": (IMG, ["y = multilinear_upsample(x, factor = [2, 2], method = 'symmetric', border = 'replicate');"], ["y"]),
    "sum_reduce": (IMG, ["y = sum_reduce(x, axes = [1], normalize = false);"], ["y"]),
    "max_reduce": (IMG, ["y = max_reduce(x, axes = [2, 3]);"], ["y"]),
    "min_reduce": (IMG, ["y = min_reduce(x, axes = [2, 3]);"], ["y"]),
    "argmax_reduce": (IMG, ["y = argmax_reduce(x, axes = [1]);"], ["y"]),
    "argmin_reduce": (IMG, ["y = argmin_reduce(x, axes = [1]);"], ["y"]),
    "any_reduce": ({"x": (L, [2, 3])}, ["y = any_reduce(x, axes = [1]);"], ["y"]),
    "all_reduce": ({"x": (L, [2, 3])}, ["y = all_reduce(x, axes = [1]);"], ["y"]),
    "mean_reduce": (IMG, ["y = mean_reduce(x, axes = [2, 3]);"], ["y"]),
    "moments": (IMG, ["m, v = moments(x, axes = [2, 3]);"], ["m", "v"]),
    "softabs": (X23, ["y = softabs(x, epsilon = 0.001);"], ["y"]),
    "softmax": (X23, ["y = softmax(x, axes = [1]);"], ["y"]),
    "elu": (X23, ["y = elu(x, alpha = 1.0);"], ["y"]),
    "selu": (X23, ["y = selu(x, alpha = 1.67326319, lambda = 1.05070102);"], ["y"]),
    "prelu": ({"x": (S, [1, 2, 4, 4]), "a": (S, [1, 2])}, ["y = prelu(x, a);"], ["y"]),
    "leaky_relu": (X23, ["y = leaky_relu(x, alpha = 0.1);"], ["y"]),
    "max_pool_with_index": (IMG, [f"y, i = max_pool_with_index(x, size = [1, 1, 3, 3], {WINDOW_2D});"], ["y", "i"]),
    "max_pool": (IMG, ["y = max_pool(x, size = [1, 1, 2, 2], border = 'ignore', padding = [(0, 0), (0, 0), (0, 0), (0, 0)], "
                       "stride = [1, 1, 2, 2], dilation = [1, 1, 1, 1]);"], ["y"]),
    "avg_pool": (IMG, [f"y = avg_pool(x, size = [1, 1, 3, 3], {WINDOW_2D});"], ["y"]),
    "rms_pool": (IMG, [f"y = rms_pool(x, size = [1, 1, 3, 3], {WINDOW_2D});"], ["y"]),
    "linear": ({"x": (S, [2, 3]), "f": (S, [4, 3]), "b": (S, [1, 4])}, ["y = linear(x, f, b);"], ["y"]),
    "separable_conv": ({"x": (S, [1, 2, 8, 8]), "p": (S, [2, 1, 3, 3]), "q": (S, [4, 2, 1, 1]), "b": (S, [1, 4])},
                       [f"y = separable_conv(x, p, q, b, {CONV_2D}, groups = 1);"], ["y"]),
    "separable_deconv": ({"x": (S, [1, 4, 8, 8]), "p": (S, [2, 1, 3, 3]), "q": (S, [4, 2, 1, 1]), "b": (S, [1, 2])},
                         [f"y = separable_deconv(x, p, q, b, {CONV_2D}, output_shape = [], groups = 1);"], ["y"]),
    "local_response_normalization": (IMG, ["y = local_response_normalization(x, size = [1, 3, 1, 1], alpha = 0.0001, "
                                           "beta = 0.75, bias = 1.0);"], ["y"]),
    "local_mean_normalization": (IMG, ["y = local_mean_normalization(x, size = [1, 1, 3, 3]);"], ["y"]),
    "local_variance_normalization": (IMG, ["y = local_variance_normalization(x, size = [1, 1, 3, 3], bias = 1.0, "
                                           "epsilon = 0.00001);"], ["y"]),
    "local_contrast_normalization": (IMG, ["y = local_contrast_normalization(x, size = [1, 1, 3, 3], bias = 1.0, "
                                           "epsilon = 0.00001);"], ["y"]),
    "l1_normalization": (IMG, ["y = l1_normalization(x, axes = [1], bias = 0.0, epsilon = 0.00001);"], ["y"]),
    "l2_normalization": (IMG, ["y = l2_normalization(x, axes = [1], bias = 0.0, epsilon = 0.00001);"], ["y"]),
    "batch_normalization": ({"x": (S, [1, 2, 4, 4]), "m": (S, [1, 2]), "v": (S, [1, 2]), "o": (S, [1, 2]), "s": (S, [1, 2])},
                            ["y = batch_normalization(x, m, v, o, s, epsilon = 0.00001);"], ["y"]),
    "avg_roi_pool": ({"x": (S, [1, 2, 8, 8]), "r": (S, [3, 4]), "i": (I, [3])},
                     ["y = avg_roi_pool(x, r, i, output_size = [2, 2]);"], ["y"]),
    "max_roi_pool": ({"x": (S, [1, 2, 8, 8]), "r": (S, [3, 4]), "i": (I, [3])},
                     ["y = max_roi_pool(x, r, i, output_size = [2, 2]);"], ["y"]),
    "roi_resample": ({"x": (S, [1, 2, 8, 8]), "r": (S, [3, 4]), "i": (I, [3])},
                     ["y = roi_resample(x, r, i, output_size = [2, 2], method = 'symmetric');"], ["y"]),
    "avg_roi_align": ({"x": (S, [1, 2, 8, 8]), "r": (S, [3, 4]), "i": (I, [3])},
                      ["y = avg_roi_align(x, r, i, output_size = [2, 2], sampling_rate = [2, 2], "
                       "resize_method = 'symmetric');"], ["y"]),
    "max_roi_align": ({"x": (S, [1, 2, 8, 8]), "r": (S, [3, 4]), "i": (I, [3])},
                      ["y = max_roi_align(x, r, i, output_size = [2, 2], sampling_rate = [2, 2], "
                       "resize_method = 'symmetric');"], ["y"]),
    "min_max_linear_quantize": ({"x": (S, [2, 3]), "a": (S, [1]), "b": (S, [1])},
                                ["y = min_max_linear_quantize(x, a, b, bits = 8, signed = true, symmetric = false);"], ["y"]),
    "zero_point_linear_quantize": ({"x": (S, [2, 3]), "z": (I, [1]), "s": (S, [1])},
                                   ["y = zero_point_linear_quantize(x, z, s, bits = 8, signed = true, symmetric = false);"], ["y"]),
    "linear_quantize": ({"x": (S, [2, 3]), "a": (S, [1]), "b": (S, [1])}, ["y = linear_quantize(x, a, b, bits = 8);"], ["y"]),
    "logarithmic_quantize": ({"x": (S, [2, 3]), "b": (S, [1])}, ["y = logarithmic_quantize(x, b, bits = 8);"], ["y"]),
    "copy_n": (X23, ["[a, b] = copy_n(x, times = 2);"], ["a", "b"]),
    "add_n": (XY23, ["z = add_n([x, y]);"], ["z"]),
}

for _op in ("add", "sub", "mul", "div", "pow", "min", "max"):
    OPERATION_CASES[_op] = (XY23, [f"z = {_op}(x, y);"], ["z"])
for _op in ("lt", "gt", "le", "ge", "eq", "ne"):
    OPERATION_CASES[_op] = (XY23, [f"z = {_op}(x, y);"], ["z"])
for _op in ("and", "or"):
    OPERATION_CASES[_op] = ({"x": (L, [2, 3]), "y": (L, [2, 3])}, [f"z = {_op}(x, y);"], ["z"])
OPERATION_CASES["not"] = ({"x": (L, [2, 3])}, ["y = not(x);"], ["y"])
for _op in ("exp", "log", "sin", "cos", "tan", "sinh", "cosh", "tanh", "asin", "acos", "atan", "asinh", "acosh",
            "atanh", "abs", "sign", "rcp", "neg", "copy", "floor", "ceil", "round", "sqr", "sqrt", "rsqr", "rsqrt",
            "log2", "relu", "sigmoid", "softplus", "gelu", "silu"):
    OPERATION_CASES[_op] = (X23, [f"y = {_op}(x);"], ["y"])


def operation_cases() -> list[Case]:
    return [Case(op, _graph(*spec)) for op, spec in sorted(OPERATION_CASES.items())]


COMPOUND = """version 1.0;
extension KHR_enable_fragment_definitions, KHR_enable_operator_expressions;

# A residual block written with operator expressions and a comprehension.
fragment conv_bn_relu( input: tensor<scalar>, filter: tensor<scalar>, scale: scalar ) -> ( output: tensor<scalar> )
{
    pads = [for i in range_of([3, 3]) yield (1, 1)];
    c = conv(input, filter, 0.0, border = 'constant', padding = pads, stride = [1, 1], dilation = [1, 1], groups = 1);
    output = relu(c * scale);
}

fragment residual( input: tensor<scalar>, w1: tensor<scalar>, w2: tensor<scalar> ) -> ( output: tensor<scalar> )
{
    h = conv_bn_relu(input, w1, scale = 0.5);
    g = conv_bn_relu(h, w2, scale = 2.0 ^ -1.0);
    output = relu(input + g);
}

graph ResNetish( image ) -> ( logits )
{
    image = external<scalar>(shape = [1, 4, 8, 8]);
    w1 = variable<scalar>(shape = [4, 4, 3, 3], label = 'w1');
    w2 = variable<scalar>(shape = [4, 4, 3, 3], label = 'w2');
    w3 = variable<scalar>(shape = [4, 4, 3, 3], label = 'w3');
    w4 = variable<scalar>(shape = [4, 4, 3, 3], label = 'w4');
    r1 = residual(image, w1, w2);
    r2 = residual(r1, w3, w4);
    pooled = mean_reduce(r2, axes = [2, 3]);
    flat = reshape(pooled, shape = [1, -1], axis_start = 0, axis_count = -1);
    logits = softmax(flat * 3.0 - 1.0, axes = [1]);
}
"""

COMPOUND_ATTRIBUTES = """version 1.0;
extension KHR_enable_fragment_definitions, KHR_enable_operator_expressions;

# Attribute arithmetic: arrays, tuples, if-else, subscripts, slices, builtins, strings.
fragment pool_all( input: tensor<scalar>, factor: integer[], mode: string ) -> ( output: tensor<scalar> )
{
    dims = 2 + length_of(factor);
    sizes = [1, 1] + factor;
    pads = [(0, 0)] * dims;
    first = sizes[2:][0];
    scaled = [for f in factor yield f * 1];
    output = max_pool(input, size = sizes, border = 'ignore', padding = pads, stride = sizes, dilation = [1] * dims)
        if length_of(mode) == 3 && first > 0 else
        avg_pool(input, size = sizes, border = 'constant', padding = pads, stride = [1, 1] + scaled, dilation = [1] * dims);
}

graph Attributes( x ) -> ( a, b )
{
    x = external<scalar>(shape = [1, 3, 8, 8]);
    a = pool_all(x, factor = [2, 2], mode = 'max');
    b = pool_all(x, factor = [4, 2], mode = 'a' + 'vera' + 'ge');
}
"""

COMPOUND_TUPLES = """version 1.0;
extension KHR_enable_fragment_definitions, KHR_enable_operator_expressions;

fragment halves( input: tensor<scalar> ) -> ( low: tensor<scalar>, high: tensor<scalar> )
{
    [low, high] = split(input, axis = 1, ratios = [1, 1]);
}

graph Tuples( x ) -> ( y )
{
    x = external<scalar>(shape = [2, 8]);
    a, b = halves(x);
    m, v = moments(a, axes = [1]);
    y = concat([b - m, v, -a], axis = 1);
}
"""


def compound_cases() -> list[Case]:
    return [Case("compound_residual", COMPOUND), Case("compound_attributes", COMPOUND_ATTRIBUTES),
            Case("compound_tuples", COMPOUND_TUPLES)]


FLAT_NETWORK = """version 1.0;

# A LeNet-like network in flat syntax, every attribute explicit.
graph LeNetLike( input ) -> ( output )
{
    input = external<scalar>(shape = [1, 1, 32, 32]);
    conv1_w = variable<scalar>(shape = [6, 1, 5, 5], label = 'conv1_w');
    conv1_b = variable<scalar>(shape = [1, 6], label = 'conv1_b');
    conv2_w = variable<scalar>(shape = [16, 6, 5, 5], label = 'conv2_w');
    conv2_b = variable<scalar>(shape = [1, 16], label = 'conv2_b');
    fc1_w = variable<scalar>(shape = [120, 400], label = 'fc1_w');
    fc1_b = variable<scalar>(shape = [1, 120], label = 'fc1_b');
    fc2_w = variable<scalar>(shape = [10, 120], label = 'fc2_w');
    fc2_b = variable<scalar>(shape = [1, 10], label = 'fc2_b');
    conv1 = conv(input, conv1_w, conv1_b, border = 'constant', padding = [(0, 0), (0, 0)], stride = [1, 1], dilation = [1, 1], groups = 1);
    relu1 = relu(conv1);
    pool1 = max_pool(relu1, size = [1, 1, 2, 2], border = 'ignore', padding = [(0, 0), (0, 0), (0, 0), (0, 0)], stride = [1, 1, 2, 2], dilation = [1, 1, 1, 1]);
    conv2 = conv(pool1, conv2_w, conv2_b, border = 'constant', padding = [(0, 0), (0, 0)], stride = [1, 1], dilation = [1, 1], groups = 1);
    relu2 = relu(conv2);
    pool2 = max_pool(relu2, size = [1, 1, 2, 2], border = 'ignore', padding = [(0, 0), (0, 0), (0, 0), (0, 0)], stride = [1, 1, 2, 2], dilation = [1, 1, 1, 1]);
    flat = reshape(pool2, shape = [1, -1], axis_start = 0, axis_count = -1);
    fc1 = linear(flat, fc1_w, fc1_b);
    relu3 = relu(fc1);
    fc2 = linear(relu3, fc2_w, fc2_b);
    output = softmax(fc2, axes = [1]);
}
"""

LITERALS = """version 1.0;

# Every literal form: integers, scalars with and without exponent, both quotes, logicals.
graph Literals( x ) -> ( y )
{
    x = external<scalar>(shape = [2, 3]);
    a = leaky_relu(x, alpha = 1.5e-2);
    b = elu(a, alpha = 2.);
    c = pad(b, padding = [(0, 0), (1, 2)], border = "reflect", value = -0.25);
    d = clamp(c, -1E+2, 100.0);
    e = matmul(d, d, transposeA = true, transposeB = false);
    y = reshape(e, shape = [-1], axis_start = 0, axis_count = -1);
}
"""


def document_cases() -> list[Case]:
    return [Case("flat_network", FLAT_NETWORK), Case("literals", LITERALS)]


def valid_cases() -> list[Case]:
    return operation_cases() + compound_cases() + document_cases()


# Invalid variants: (name, text, the code our checker must report, both parsers reject).
_BASE = OPERATION_CASES["conv"]


def _mutate(body: list[str], inputs: dict | None = None, outputs: list[str] | None = None) -> str:
    return _graph(inputs or _BASE[0], body, outputs or ["y"])


INVALID_CASES: list[tuple[str, str, str]] = [
    ("syntax_missing_semicolon", HEADER + "graph G( x ) -> ( y )\n{\n    x = external<scalar>(shape = [2])\n    y = relu(x);\n}\n", "NNEF-E001"),
    ("syntax_bad_character", HEADER + "graph G( x ) -> ( y )\n{\n    x = external<scalar>(shape = [2]);\n    y = relu(x) @ 2;\n}\n", "NNEF-E001"),
    ("syntax_unterminated_string", HEADER + "graph G( x ) -> ( y )\n{\n    x = external<scalar>(shape = [2]);\n    y = pad(x, padding = [(1, 1)], border = 'constant, value = 0.0);\n}\n", "NNEF-E001"),
    ("version_2", "version 2.0;\n\ngraph G( x ) -> ( x )\n{\n    x = external<scalar>(shape = [2]);\n}\n", "NNEF-E002"),
    ("no_graph", "version 1.0;\n", "NNEF-E004"),
    ("operator_without_extension", _mutate([f"y = conv(x, f, b, {CONV_2D}, groups = 1) + 1.0;"]), "NNEF-E005"),
    ("fragment_without_extension", "version 1.0;\nfragment f( x: tensor<scalar> ) -> ( y: tensor<scalar> );\n"
     "graph G( x ) -> ( x )\n{\n    x = external<scalar>(shape = [2]);\n}\n", "NNEF-E006"),
    ("unknown_extension", "version 1.0;\nextension KHR_no_such_thing;\ngraph G( x ) -> ( x )\n{\n    x = external<scalar>(shape = [2]);\n}\n", "NNEF-E007"),
    ("undeclared_identifier", _mutate([f"y = conv(x, w, b, {CONV_2D}, groups = 1);"]), "NNEF-E010"),
    ("reassignment", _mutate([f"y = conv(x, f, b, {CONV_2D}, groups = 1);", "y = relu(x);"]), "NNEF-E011"),
    ("unknown_operation", _mutate([f"y = convolution(x, f, b, {CONV_2D}, groups = 1);"]), "NNEF-E012"),
    ("too_many_arguments", _mutate(["y = relu(x, f);"]), "NNEF-E013"),
    ("missing_argument", _mutate(["y = transpose(x);"]), "NNEF-E013"),
    ("unknown_parameter", _mutate([f"y = conv(x, f, b, {CONV_2D}, group = 1);"]), "NNEF-E014"),
    ("type_string_for_integer", _mutate([f"y = conv(x, f, b, {CONV_2D}, groups = 'one');"]), "NNEF-E015"),
    ("type_integer_for_scalar", _mutate(["y = leaky_relu(x, alpha = 1);"]), "NNEF-E015"),
    ("duplicate_argument", _mutate([f"y = conv(x, f, b, {CONV_2D}, groups = 1, groups = 1);"]), "NNEF-E016"),
    ("result_count", _mutate(["y, z = relu(x);"], outputs=["y"]), "NNEF-E017"),
    ("positional_attribute", _mutate(["y = transpose(x, [0, 1, 3, 2]);"]), "NNEF-E018"),
    ("shape_conv_channels", _mutate([f"y = conv(x, f, b, {CONV_2D}, groups = 2);"]), "NNEF-E020"),
    ("shape_add", _mutate(["y = add(x, f);"]), "NNEF-E020"),
    ("shape_concat", _mutate(["y = concat([x, f], axis = 1);"]), "NNEF-E020"),
    ("shape_reshape_volume", _mutate(["y = reshape(x, shape = [5, -1], axis_start = 0, axis_count = -1);"]), "NNEF-E020"),
    ("shape_linear", _graph({"x": (S, [2, 3]), "f": (S, [4, 5])}, ["y = linear(x, f, 0.0);"], ["y"]), "NNEF-E020"),
    ("shape_transpose_axes", _mutate(["y = transpose(x, axes = [0, 0, 1, 2]);"]), "NNEF-E020"),
    ("graph_param_not_external", HEADER + "graph G( x ) -> ( y )\n{\n    x = variable<scalar>(shape = [2], label = 'x');\n    y = relu(x);\n}\n", "NNEF-E040"),
    ("graph_result_unassigned", _mutate([f"z = conv(x, f, b, {CONV_2D}, groups = 1);"], outputs=["y"]), "NNEF-E041"),
    ("external_not_param", HEADER + "graph G( x ) -> ( y )\n{\n    x = external<scalar>(shape = [2]);\n    z = external<scalar>(shape = [2]);\n    y = add(x, z);\n}\n", "NNEF-E042"),
]

# Invalid for us, accepted by the Khronos parser: deliberate, documented differences.
STRICTER_THAN_KHRONOS: list[tuple[str, str, str]] = [
    ("enum_border", _mutate(["y = conv(x, f, b, border = 'zeros', padding = [(1, 1), (1, 1)], stride = [1, 1], "
                             "dilation = [1, 1], groups = 1);"]), "NNEF-E021"),
    ("squeeze_non_singleton", _graph(X23, ["y = squeeze(x, axes = [1]);"], ["y"]), "NNEF-E020"),
    ("window_larger_than_input", _graph({"x": (S, [1, 1, 2, 2]), "f": (S, [1, 1, 3, 3])},
                                        ["y = conv(x, f, 0.0, border = 'constant', padding = [(0, 0), (0, 0)], "
                                         "stride = [1, 1], dilation = [1, 1], groups = 1);"], ["y"]), "NNEF-E020"),
]


# Valid NNEF the Khronos parser rejects because of its own limitations (name, text, its message).
KHRONOS_LIMITATIONS: list[tuple[str, str, str]] = [
    ("string_equality", COMPOUND_ATTRIBUTES.replace("length_of(mode) == 3", "mode == 'max'"), "Value: kind mismatch"),
]


def invalid_cases() -> list[tuple[str, str, str]]:
    return INVALID_CASES
