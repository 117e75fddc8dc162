"""Tidy the statements of a generated C item for the coding standard (MISRA C:2012, the prove
step's `prove.standards`): index arithmetic without dead terms (`+ 0`, `0 * n`, `* 1`, `% 1`:
rule 2.2) and every operator precedence written out with parentheses (rule 12.1).

The kernels write index expressions from their geometry (`(0 * 4 + ob + 0) * 16 + y + 0`)
where a group, a batch or an offset happens to be zero; this pass removes what cannot change a
value, after the kernels, on the finished text of an item, one line at a time: no line is
added or removed, so the trace's line numbers stand.

What it touches, and why that keeps every bit:
* Integer arithmetic only is simplified: subscripts, `const int` initialisers, `for` headers,
  and the integer operands of pointer arithmetic (a `+` chain whose leftmost operand is a
  pointer or an array). Integer addition of 0, multiplication by 1, division by 1 are the
  identity; a product with a 0 factor and `x % 1` are 0. Float expressions are never
  simplified (`x + 0` turns -0 into +0, `x * 1` quiets a signalling NaN).
* Parentheses are added around every operand that is itself a binary operation of another
  precedence: the parse tree, hence the computation, is unchanged.
* Anything the parser does not know (a cast to an unlisted type, a comment inside a
  statement, an initialiser list) leaves its line as it was.

Both are checked on every line it changes: the new text parses back to the tree it was
printed from, and each simplified integer expression takes the value of the original on
random values of its variables; a difference is a generator defect (CODEGEN-E008).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Iterable

from pipeline.codegen.shared.errors import CodegenError

_TOKEN = re.compile(r"""
    (?P<space>\s+)
  | (?P<float>0[xX][0-9a-fA-F]*\.?[0-9a-fA-F]*[pP][-+]?\d+[fFlL]?|(?:\d+\.\d*|\.\d+)(?:[eE][-+]?\d+)?[fFlL]?|\d+[eE][-+]?\d+[fFlL]?)
  | (?P<int>0[xX][0-9a-fA-F]+[uUlL]*|\d+[uUlL]*)
  | (?P<name>[A-Za-z_]\w*)
  | (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
  | (?P<op><<=|>>=|\+\+|--|->|<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%&|^]=|[-+*/%<>=!~&|^?:.,;(){}\[\]])
""", re.X)

# C binary operators by precedence (higher binds tighter), as the parser climbs them.
_BINARY = {"*": 10, "/": 10, "%": 10, "+": 9, "-": 9, "<<": 8, ">>": 8, "<": 7, "<=": 7, ">": 7, ">=": 7,
           "==": 6, "!=": 6, "&": 5, "^": 4, "|": 3, "&&": 2, "||": 1}
_TYPES = {"int", "float", "double", "unsigned", "char", "void", "const", "int32_t", "uint32_t", "int64_t", "uint64_t",
          "size_t", "uint16_t", "int16_t", "uint8_t", "nnef_vf", "nnef_vi"}
_KEYWORDS = _TYPES | {"static", "restrict", "return", "for", "if", "else", "while", "do", "sizeof", "struct", "typedef"}


class _Unparsed(Exception):
    """The line holds something this pass does not read: it is left as it was."""


@dataclass(frozen=True)
class Node:
    """An expression: `kind` is num, name, opaque (text kept as is), un (op, a), bin (op, a, b),
    call (a, args), index (a, b), cond (a, b, c), cast (text, a)."""

    kind: str
    text: str = ""
    kids: tuple["Node", ...] = ()


def _tokens(text: str) -> list[tuple[str, str]]:
    out, at = [], 0
    while at < len(text):
        match = _TOKEN.match(text, at)
        if match is None:
            raise _Unparsed(text[at:at + 10])
        if match.lastgroup == "string":
            raise _Unparsed("string")
        if match.lastgroup != "space":
            out.append((match.lastgroup or "", match.group()))
        at = match.end()
    return out


class _Parser:
    """Precedence climbing over C expressions (no assignment inside, no comma operator)."""

    def __init__(self, tokens: list[tuple[str, str]]) -> None:
        self.tokens, self.at = tokens, 0

    def peek(self, offset: int = 0) -> str:
        at = self.at + offset
        return self.tokens[at][1] if at < len(self.tokens) else ""

    def take(self, expected: str | None = None) -> str:
        if self.at >= len(self.tokens) or (expected is not None and self.tokens[self.at][1] != expected):
            raise _Unparsed(f"expected {expected}")
        self.at += 1
        return self.tokens[self.at - 1][1]

    def expression(self, level: int = 0) -> Node:
        left = self.unary()
        while True:
            op = self.peek()
            if op == "?" and level == 0:
                self.take()
                middle = self.expression()
                self.take(":")
                return Node("cond", "?", (left, middle, self.expression()))
            precedence = _BINARY.get(op)
            if precedence is None or precedence <= level:
                return left
            self.take()
            left = Node("bin", op, (left, self.expression(precedence)))

    def unary(self) -> Node:
        op = self.peek()
        if op in ("-", "+", "!", "~", "*", "&"):
            self.take()
            return Node("un", op, (self.unary(),))
        if op == "(" and self.peek(1) in _TYPES:
            self.take()
            parts = []
            while self.peek() != ")":
                parts.append(self.take())
                if parts[-1] not in _TYPES and parts[-1] != "*":
                    raise _Unparsed("cast")
            self.take(")")
            return Node("cast", "(" + " ".join(parts).replace(" *", "*") + ")", (self.unary(),))
        return self.postfix(self.primary())

    def primary(self) -> Node:
        if self.at >= len(self.tokens):
            raise _Unparsed("end")
        kind, text = self.tokens[self.at]
        if text == "(":
            self.take()
            inner = self.expression()
            self.take(")")
            return inner
        if text == "sizeof":
            self.take()
            self.take("(")
            parts = []
            while self.peek() != ")":
                parts.append(self.take())
            self.take(")")
            return Node("opaque", f"sizeof({' '.join(parts)})")
        if kind in ("int", "float"):
            self.take()
            return Node("num" if kind == "int" else "opaque", text)
        if kind == "name" and text not in _KEYWORDS:
            self.take()
            return Node("name", text)
        raise _Unparsed(text)

    def postfix(self, node: Node) -> Node:
        while True:
            if self.peek() == "(":
                self.take()
                args = []
                if self.peek() != ")":
                    args.append(self.expression())
                    while self.peek() == ",":
                        self.take()
                        args.append(self.expression())
                self.take(")")
                node = Node("call", "", (node, *args))
            elif self.peek() == "[":
                self.take()
                index = self.expression()
                self.take("]")
                node = Node("index", "", (node, index))
            else:
                return node


def _parse(text: str) -> Node:
    parser = _Parser(_tokens(text))
    node = parser.expression()
    if parser.at != len(parser.tokens):
        raise _Unparsed("trailing")
    return node


def _precedence(node: Node) -> int:
    return _BINARY[node.text] if node.kind == "bin" else (0 if node.kind == "cond" else 99)


def render(node: Node) -> str:
    """C text of `node`, every operand of another precedence in parentheses (MISRA C:2012 12.1)."""
    if node.kind in ("num", "name", "opaque"):
        return node.text
    if node.kind == "un":
        inner = node.kids[0]
        return f"{node.text}{render(inner) if inner.kind not in ('bin', 'cond') else '(' + render(inner) + ')'}"
    if node.kind == "cast":
        inner = node.kids[0]
        return f"{node.text}{render(inner) if inner.kind not in ('bin', 'cond', 'un') else '(' + render(inner) + ')'}"
    if node.kind == "call":
        return f"{_operand(node.kids[0])}({', '.join(render(k) for k in node.kids[1:])})"
    if node.kind == "index":
        return f"{_operand(node.kids[0])}[{render(node.kids[1])}]"
    if node.kind == "cond":
        a, b, c = (k if k.kind not in ("bin", "cond") else None for k in node.kids)
        return " ? ".join([render(a) if a else f"({render(node.kids[0])})",
                           render(b) if b else f"({render(node.kids[1])})"]) + \
            " : " + (render(c) if c else f"({render(node.kids[2])})")
    left, right = node.kids
    mine = _precedence(node)
    left_text = render(left) if _precedence(left) == mine or left.kind not in ("bin", "cond") else f"({render(left)})"
    right_text = render(right) if right.kind not in ("bin", "cond") else f"({render(right)})"
    return f"{left_text} {node.text} {right_text}"


def _operand(node: Node) -> str:
    return render(node) if node.kind in ("num", "name", "opaque", "call", "index") else f"({render(node)})"


# ---------------------------------------------------------------- integer simplification

def _pure(node: Node) -> bool:
    """No call (other than sizeof, an opaque primary) whose evaluation could be dropped."""
    return node.kind != "call" and all(_pure(k) for k in node.kids)


def _zero(node: Node) -> bool:
    return node.kind == "num" and _value(node.text) == 0


def _one(node: Node) -> bool:
    return node.kind == "num" and _value(node.text) == 1


def _value(text: str) -> int:
    return int(text.rstrip("uUlL"), 0)


def simplify_int(node: Node, pointers: frozenset[str] = frozenset()) -> Node:
    """`node`, an integer expression, without its identity operations and zero terms."""
    kids = tuple(simplify_int(k, pointers) if node.kind in ("bin", "un") else _tidy_inside(k, pointers)
                 for k in node.kids)
    if node.kind == "un" and node.text == "-" and _zero(kids[0]):
        return kids[0]
    if node.kind != "bin":
        return Node(node.kind, node.text, kids)
    op, (a, b) = node.text, kids
    if op == "+" and _zero(b):
        return a
    if op == "+" and _zero(a):
        return b
    if op == "-" and _zero(b):
        return a
    if op == "*" and (_one(b) or _one(a)):
        return a if _one(b) else b
    if op == "/" and _one(b):
        return a
    if op == "*" and (_zero(a) or _zero(b)) and _pure(a) and _pure(b):
        return Node("num", "0")
    if op == "%" and _one(b) and _pure(a):
        return Node("num", "0")
    if op in ("/", "%") and _zero(a) and b.kind == "num" and not _zero(b):
        return Node("num", "0")
    return Node("bin", op, (a, b))


def _pointer_chain(node: Node, pointers: frozenset[str]) -> bool:
    """A `+` chain whose leftmost operand is a pointer or array name."""
    while node.kind == "bin" and node.text == "+":
        node = node.kids[0]
    return node.kind == "name" and node.text in pointers


def _tidy_pointer(node: Node, pointers: frozenset[str]) -> Node:
    """Pointer arithmetic p + i + j...: the integer operands simplified, a zero one dropped."""
    if node.kind == "bin" and node.text == "+":
        left, right = _tidy_pointer(node.kids[0], pointers), simplify_int(node.kids[1], pointers)
        return left if _zero(right) else Node("bin", "+", (left, right))
    return node


def _tidy_inside(node: Node, pointers: frozenset[str]) -> Node:
    """A float (or unknown) expression: subscripts and pointer arithmetic inside it simplified,
    nothing else."""
    if node.kind == "index":
        return Node("index", "", (_tidy_inside(node.kids[0], pointers), simplify_int(node.kids[1], pointers)))
    if _pointer_chain(node, pointers):
        return _tidy_pointer(node, pointers)
    return Node(node.kind, node.text, tuple(_tidy_inside(k, pointers) for k in node.kids))


# ---------------------------------------------------------------- checks of a rewrite

def _evaluate(node: Node, values: dict[str, int]) -> int:
    if node.kind == "num":
        return _value(node.text)
    if node.kind in ("name", "opaque", "call", "index", "cast"):
        return values.setdefault(render(node), random.Random(render(node)).randint(-40, 40))
    if node.kind == "un":
        inner = _evaluate(node.kids[0], values)
        return {"-": -inner, "+": inner, "~": ~inner, "!": int(not inner)}.get(node.text, inner)
    a, b = (_evaluate(k, values) for k in node.kids[:2])
    op = node.text
    if op in ("/", "%"):
        if b == 0:
            return 0
        q = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)
        return q if op == "/" else a - q * b
    return {"+": a + b, "-": a - b, "*": a * b, "<<": a << (b & 7), ">>": a >> (b & 7), "<": int(a < b),
            "<=": int(a <= b), ">": int(a > b), ">=": int(a >= b), "==": int(a == b), "!=": int(a != b),
            "&": a & b, "^": a ^ b, "|": a | b, "&&": int(bool(a) and bool(b)), "||": int(bool(a) or bool(b))}[op]


def _same_integers(before: Node, after: Node, pointers: frozenset[str], where: str) -> None:
    """CODEGEN-E008 unless every simplified integer expression (the whole of an integer one, the
    subscripts and pointer offsets of another) equals the original on random values."""
    olds, news = _integer_parts(before, pointers), _integer_parts(after, pointers)
    if len(olds) != len(news):
        raise CodegenError("CODEGEN-E008", f"tidying changed the structure of {render(before)!r} ({where})")
    for old, new in zip(olds, news):
        _same_value(old, new, where)


def _integer_parts(node: Node, pointers: frozenset[str]) -> list[Node]:
    """The integer expressions inside a float one: subscripts, and the offset of pointer arithmetic
    (its operands after the pointer, as one sum)."""
    if node.kind == "index":
        return _integer_parts(node.kids[0], pointers) + [node.kids[1]]
    if _pointer_chain(node, pointers):
        terms = []
        while node.kind == "bin" and node.text == "+":
            terms.append(node.kids[1])
            node = node.kids[0]
        total = Node("num", "0")
        for term in reversed(terms):
            total = Node("bin", "+", (total, term))
        return [total]
    return [part for kid in node.kids for part in _integer_parts(kid, pointers)]


def _same_value(before: Node, after: Node, where: str) -> None:
    """CODEGEN-E008 unless the simplified integer expression equals the original on random values."""
    for seed in range(8):
        values: dict[str, int] = {}
        generator = random.Random(seed)
        for name in sorted(_names(before)):
            values[name] = generator.randint(-50, 50)
        if _evaluate(before, dict(values)) != _evaluate(after, dict(values)):
            raise CodegenError("CODEGEN-E008", f"tidying changed the value of {render(before)!r} into "
                               f"{render(after)!r} ({where})")


def _names(node: Node) -> set[str]:
    if node.kind in ("name", "opaque", "call", "index", "cast"):
        return {render(node)}
    return set().union(*(_names(k) for k in node.kids)) if node.kids else set()


# ---------------------------------------------------------------- statements

_DECLARATION = re.compile(r"^(?P<head>(?:static\s+)?(?:const\s+)?(?P<type>float|int|nnef_vf|nnef_vi|int32_t|uint32_t)"
                          r"\s*(?P<star>\*?)\s*(?:const\s+|restrict\s+)*)(?P<rest>[A-Za-z_]\w*\s*(?:\[[^\]]*\])?\s*=.*);"
                          r"(?P<tail>\s*(?:/\*.*\*/)?)$")
_ASSIGNMENT = re.compile(r"^(?P<target>(?:\*\()?[A-Za-z_][\w\[\]\s+*/%().-]*?)\s*(?P<op>[-+*/]?=)\s*(?P<value>[^=].*);"
                         r"(?P<tail>\s*(?:/\*.*\*/)?)$")
_FOR = re.compile(r"^(?P<lead>)for \(int (?P<var>\w+) = (?P<init>[^;]+); (?P<cond>[^;]+); "
                  r"(?P<step>[^)]+(?:\([^)]*\)[^)]*)*)\) \{$")
_CALL = re.compile(r"^(?P<cast>\(void\))?(?P<call>[A-Za-z_]\w*\(.*\));(?P<tail>\s*(?:/\*.*\*/)?)$")
_POINTER_DECL = re.compile(r"(?:float|nnef_vf)\s*\*\s*(?:const\s+|restrict\s+)*([A-Za-z_]\w*)")
_ARRAY_DECL = re.compile(r"(?:float|int|int32_t|uint32_t)\s+([A-Za-z_]\w*)\s*\[")
_DEFINE = re.compile(r"#define\s+([A-Za-z_]\w*)\s+\(")


def pointer_names(texts: Iterable[str]) -> set[str]:
    """Names declared as float pointers or arrays (parameters, locals, arenas, weight arrays and
    the weight macros of linked parameters) in `texts`."""
    found: set[str] = set()
    for text in texts:
        found.update(_POINTER_DECL.findall(text))
        found.update(_ARRAY_DECL.findall(text))
        found.update(_DEFINE.findall(text))
    return found


def _rewrite(node: Node, integer: bool, pointers: frozenset[str], where: str) -> Node:
    new = simplify_int(node, pointers) if integer else _tidy_inside(node, pointers)
    if new != node:
        if integer:
            _same_value(node, new, where)
        else:
            _same_integers(node, new, pointers, where)
    return new


def _checked(text: str, node: Node, where: str) -> str:
    """`text` (the rendering of `node`) after checking that it parses back to `node`."""
    if _parse(text) != node:
        raise CodegenError("CODEGEN-E008", f"tidying {where}: {text!r} does not read back as written")
    return text


def _expression(text: str, integer: bool, pointers: frozenset[str], where: str) -> str:
    new = _rewrite(_parse(text), integer, pointers, where)
    return _checked(render(new), new, where)


def _declarators(rest: str) -> list[str]:
    """`a = x, b = y` split at its top-level commas."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(rest):
        depth += ch in "([{"
        depth -= ch in ")]}"
        if ch == "," and depth == 0:
            parts.append(rest[start:i])
            start = i + 1
    parts.append(rest[start:])
    return [p.strip() for p in parts]


def _statement(body: str, pointers: frozenset[str], where: str) -> str:
    """One statement (no indentation) tidied, or ValueError/_Unparsed."""
    if match := _FOR.match(body):
        init = _expression(match["init"], True, pointers, where)
        cond = _expression(match["cond"], True, pointers, where)
        step = match["step"]
        if step_match := re.fullmatch(r"(\w+) \+= (.+)", step):
            step = f"{step_match[1]} += {_expression(step_match[2], True, pointers, where)}"
        return f"{match['lead']}for (int {match['var']} = {init}; {cond}; {step}) {{"
    if match := _DECLARATION.match(body):
        integer = match["type"] in ("int", "int32_t", "uint32_t") and not match["star"]
        out = []
        for declarator in _declarators(match["rest"]):
            name, _, value = declarator.partition("=")
            if "[" in name:
                raise _Unparsed("array")
            out.append(f"{name.strip()} = {_expression(value.strip(), integer, pointers, where)}")
        return f"{match['head']}{', '.join(out)};{match['tail']}"
    if match := _CALL.match(body):
        return f"{match['cast'] or ''}{_expression(match['call'], False, pointers, where)};{match['tail']}"
    if match := _ASSIGNMENT.match(body):
        target = _expression(match["target"], False, pointers, where)
        return f"{target} {match['op']} {_expression(match['value'], False, pointers, where)};{match['tail']}"
    raise _Unparsed("statement")


def tidy_item(text: str, where: str, declarations: Iterable[str] = ()) -> str:
    """The item's C text, each statement tidied (see the module docstring); comments, preprocessor
    lines and what the parser does not read are kept as they were; as many lines as before.
    `declarations` are the texts declaring what it uses beside its own (its weights header);
    `where` names the file in a CODEGEN-E008 (a defect of this pass, never of the input)."""
    pointers = frozenset(pointer_names([text, *declarations]))
    out, in_comment = [], False
    for number, line in enumerate(text.split("\n"), 1):
        stripped = line.strip()
        annotation = re.match(r"/\*@[^*]*\*/\s*", stripped)
        comment = stripped.startswith(("/*", "#")) or (stripped.startswith("*") and not stripped.startswith("*("))
        if in_comment or (comment and not annotation) or not stripped:
            in_comment = (in_comment or stripped.startswith("/*")) and "*/" not in stripped
            out.append(line)
            continue
        indent = line[:len(line) - len(line.lstrip())]
        lead = annotation.group() if annotation else ""
        try:
            out.append(indent + lead + _statement(stripped[len(lead):], pointers, f"{where}:{number}"))
        except _Unparsed:
            out.append(line)
    return "\n".join(out)
