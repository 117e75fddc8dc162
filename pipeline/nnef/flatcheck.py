"""Flat documents checked as they are parsed, without keeping an AST.

A 50,000-operation graph spends most of its time building AST nodes (one per literal,
with its span) that the lowering reads once and nobody keeps (issue 13). Here each
statement is read straight from the flat parser's tokens and lowered on the spot when
it is the common, clean case: `name = op<type>(args);` of a standard fragment with
literal, identifier, array and tuple arguments, every parameter written out, every type
and enumeration right, the shape inferred, the name new. The reader only *proves* that
case; at the first doubt (a construct it does not read, anything that could be a
finding) it hands the statement, unchanged, to the flat parser and the general lowering
(`GraphBuilder._assign_top`), which report exactly what they always report. Nothing is
committed to the builder's state before the proof is complete.

Most statements are not even tokenised: flatstatements.py matches the common one-line
form whole, and `_matched` reads its arguments from the match (argument texts read once
per distinct text) and lowers it through the same `_lower` as the token reader. A
matched statement that is not certainly clean is tokenised on its own (`_tokenised`) and
read exactly as it would have been without the regex.

`check_flat` returns None when the text is not a flat document (the caller then runs the
ordinary path, which also reports syntax errors and limits). The document AST is then
not built; `checker.CheckReport.documents` parses it again when asked for it.
tests/nnef/test_nnef_fastpath_differential.py compares the results with the lark parser
followed by the general lowering, findings included.
"""

from __future__ import annotations

from typing import Any

from pipeline.diagnostics import Finding, Span
from pipeline.nnef import ast, limits
from pipeline.nnef import types as T
from pipeline.nnef.catalogue import FragmentSig, standard_catalogue
from pipeline.nnef.flatparse import _KEYWORDS, _NUMBERS, _FlatParser, _GiveUp, _Kinds, _new_tuple, _number_value, _tokenise
from pipeline.nnef.flatstatements import ARGUMENT, ITEM, statement_tokens
from pipeline.nnef.graph import Graph, Operation, Ref
from pipeline.nnef.lowering import GraphBuilder, Options
from pipeline.nnef.lowering.invocations import SYNC_OPERATIONS
from pipeline.nnef.lowering.values import AUTOMATIC_WHEN_EMPTY, TYPE_DECLARATIONS, lvalue_names


def _number(text: str) -> Any:
    """The value of a number token, with a leading '-' when negated (as the token path
    reads `-` followed by a number)."""
    if text[0] == "-":
        return -_number(text[1:])
    known = _NUMBERS.get(text)
    return (known if known is not None else _number_value(text))[0]


_REF, _LIST = "ref", "list"  # kinds of argument values (_StreamingChecker._arguments)


class _Slow(Exception):
    """This statement is not the clean common case: the general path takes it."""


def _require_clean(checks: Any, values: dict[str, Any], dtypes: Any) -> None:
    """Raise _Slow unless every (name, fast check, allowed strings) of `checks` passes on `values`."""
    for name, fast, allowed in checks:
        value = values[name]
        if fast is None or not fast(value, dtypes):
            raise _Slow
        if allowed is not None and isinstance(value, str) and value not in allowed:
            raise _Slow


def _plain_sig(sig: FragmentSig) -> tuple[tuple[Any, ...], dict[str, Any], tuple[str, ...]] | None:
    """(params with their attribute flags, params by name, names of the generic params) of
    a fragment the reader can lower: standard or extension, no item parameters, one
    non-array result, not a sync operation; None otherwise."""
    if sig.origin == "user" or sig.name in SYNC_OPERATIONS or len(sig.results) != 1:
        return None
    if isinstance(sig.results[0].type, ast.ArrayType):
        return None
    if any(p.is_item for p in sig.params):
        return None
    return (tuple((p, p.is_attribute) for p in sig.params), sig.params_by_name,
            tuple(p.name for p in sig.params if T.is_generic(p.type)))


class _StreamingChecker(_FlatParser):
    def __init__(self, text: str, file: str) -> None:
        super().__init__(text, file)
        self.catalogue = dict(standard_catalogue())  # a flat document defines no fragments
        self.profile = "certification"
        self.graphs: list[Graph] = []
        self.findings: list[Finding] = []
        self._plain: dict[str, Any] = {}
        self._typed: dict[tuple[str, str | None], Any] = {}  # per graph: see _typing
        self._parsed: dict[str, Any] = {}  # arguments by their text (statements read whole): _arguments
        self._clean_attributes: set[tuple[str, str | None, str]] = set()  # see _lower

    def _tokens(self, text: str) -> tuple[list[str], list[Any], Any]:
        texts, kinds, starts, self.matches = statement_tokens(text)
        return texts, kinds, starts

    # ------------------------------------------------------------------ graphs

    def _graph(self, item: bool) -> ast.GraphDef:
        first, item_name, name, params, results = self._graph_header(item)
        header = ast.GraphDef(name, params, results, (), item_name, Span(self.file, 0, 0))
        extensions = [n.value for ext in self.extensions for n in ext.names]
        options = Options(profile=self.profile,
                          operator_expressions="KHR_enable_operator_expressions" in extensions,
                          fragment_definitions="KHR_enable_fragment_definitions" in extensions)
        builder = GraphBuilder(header, self.catalogue, options, self.file, flat_document=True)
        body = self.i
        self._typed = {}
        reserved = None  # read from the tokens when the general lowering first needs it
        texts, kinds = self.texts, self.kinds
        while texts[self.i] != "}" or kinds[self.i] != "punct":
            start = self.i
            if kinds[start] == "stmt":  # a statement read whole (flatstatements.py)
                match = self.matches[start]
                try:
                    self._matched(builder, start, match)
                    self.i = start + 1
                    continue
                except _Slow:
                    if reserved is None:
                        reserved = builder.reserved = self._assigned_names(body)
                    self._tokenised(builder, start, match)
                    continue
            try:
                self.i = self._statement(builder, start)
            except _Slow:
                if reserved is None:
                    reserved = builder.reserved = self._assigned_names(body)
                self.i = start
                self._general(builder, self._assignment())
        last = self._expect("}")
        builder._check_interface()
        builder._check_unused()
        builder.graph.failed = set(builder.poisoned)
        self.graphs.append(builder.graph)
        self.findings += builder.findings
        return ast.GraphDef(name, params, results, (), item_name, self._span(first, last))

    def _assigned_names(self, start: int) -> set[str]:
        """Every identifier assigned in the body from token `start`: the builder's `reserved`
        (generated names avoid them), which only the general lowering reads; the clean
        case never generates a name."""
        texts, kinds = self.texts, self.kinds
        names: set[str] = set()
        k = start
        while True:
            if kinds[k] == "stmt":  # a statement read whole: its target
                names.add(texts[k])
                k += 1
                continue
            if texts[k] == "}" and kinds[k] == "punct":
                break
            try:
                end = texts.index(";", k)  # a ';' text is only ever the punctuation token
            except ValueError:
                break
            if texts[k + 1] == "=" and kinds[k] == "id":
                names.add(texts[k])
            else:  # an array or tuple on the left: its identifiers up to '='
                j = k
                while texts[j] != "=" and j < end:
                    if kinds[j] == "id":
                        names.add(texts[j])
                    j += 1
            k = end + 1
        return names

    def _general(self, builder: GraphBuilder, assignment: ast.Assignment) -> None:
        """GraphBuilder.build's per-assignment step, for one statement."""
        try:
            builder._assign_top(assignment)
        except RecursionError:
            builder.report(limits.CODE, "the assignment nests fragment expansions and expressions beyond the "
                           "front end's recursion limit", assignment.span)
            for ident in lvalue_names(assignment.lhs):
                builder._declare_poisoned(ident)

    # ------------------------------------------------------------------ the clean case

    def _statement(self, builder: GraphBuilder, i: int) -> int:
        """Lower `name = op<type>(args);` at token i and return the token after ';', or
        raise _Slow (before changing any state) when it is not certainly clean.

        A punctuation text is only ever a punctuation token (identifiers, numbers,
        strings and types start with other characters), so texts alone are compared
        where a punctuation mark is expected; the commonest arguments (numbers and
        tensor names) are read inline rather than through _value_at."""
        texts, kinds = self.texts, self.kinds
        if texts[i + 1] != "=" or kinds[i] != "id" or kinds[i + 2] != "id":
            raise _Slow
        target, op_at = texts[i], i + 2
        plain = self._plain_of(texts[op_at])
        sig, params, by_name, _ = plain
        j = op_at + 1
        type_arg = None
        if kinds[j] == "typ":
            type_arg = texts[j].strip("<> \t")
            j += 1
        if texts[j] != "(":
            raise _Slow
        j += 1
        values: dict[str, Any] = {}
        refs: list[str] = []
        position = 0
        named_seen = False
        tensors, declared, numbers = builder.graph.tensors, builder.declared, _NUMBERS
        while True:
            text = texts[j]
            following = texts[j + 1]
            if following == "=" and kinds[j] == "id":
                if text not in by_name or text in values:
                    raise _Slow
                name = text
                named_seen = True
                j += 2
                text = texts[j]
                following = texts[j + 1]
            else:
                if named_seen or position >= len(params) or params[position][1]:
                    raise _Slow  # positional after named, too many, or a positional attribute
                name = params[position][0].name
                position += 1
            # _NUMBERS holds number spellings only, so `text in numbers` is a number token
            if text in numbers:
                value = numbers[text][0]
                j += 1
            elif kinds[j] == "id" and (following == "," or following == ")"):
                if text not in tensors or text not in declared:
                    raise _Slow  # undeclared (E010) or poisoned
                refs.append(text)
                value = Ref(text)
                j += 1
            elif text == "[":  # an array of numbers and pairs of numbers, else _value_at
                items: list[Any] = []
                k = j + 1
                while True:
                    item = texts[k]
                    if item in numbers:
                        items.append(numbers[item][0])
                        k += 1
                    elif (item == "(" and texts[k + 2] == "," and texts[k + 4] == ")" and texts[k + 1] in numbers
                          and texts[k + 3] in numbers):
                        items.append((numbers[texts[k + 1]][0], numbers[texts[k + 3]][0]))
                        k += 5
                    else:
                        k = -1
                        break
                    if texts[k] != ",":
                        break
                    k += 1
                if k >= 0 and texts[k] == "]":
                    value = items
                    j = k + 1
                else:
                    value, j = self._value_at(j, builder, refs)
            elif kinds[j] == "str":
                value = text[1:-1]
                j += 1
            else:
                value, j = self._value_at(j, builder, refs)
            values[name] = value
            text = texts[j]
            if text == ",":
                j += 1
                continue
            if text == ")":
                break
            raise _Slow
        close = j
        if texts[j + 1] != ";":
            raise _Slow
        lines, cols = self.lines, self.cols
        self._lower(builder, target, plain, type_arg, values, refs, (lines[i], cols[i]), (lines[op_at], cols[op_at]),
                    (lines[close], cols[close]))
        return close + 2

    def _plain_of(self, op: str) -> tuple[FragmentSig, Any, Any, Any]:
        """(signature, params with attribute flags, params by name, generic param names) of
        operation `op`; _Slow when the clean case cannot hold it."""
        plain = self._plain.get(op)
        if plain is None:
            sig = self.catalogue.get(op)
            if sig is None:
                raise _Slow
            lowerable = _plain_sig(sig)
            plain = self._plain[op] = (sig, *lowerable) if lowerable else ()
        if not plain:
            raise _Slow
        return plain

    def _lower(self, builder: GraphBuilder, target: str, plain: tuple[FragmentSig, Any, Any, Any],
               type_arg: str | None, values: dict[str, Any], refs: list[str], at: tuple[int, int],
               op_at: tuple[int, int], close_at: tuple[int, int], attributes: str | None = None) -> None:
        """Lower the statement read into `values` when it is certainly clean (else _Slow,
        before changing any state); `at`, `op_at`, `close_at`: line and column of the target,
        the operation's name and the closing parenthesis. `attributes`: the text every
        attribute value was read from, when there is one (a statement read whole): the
        attribute checks, a function of that text, the operation and the type, then run
        once per distinct text."""
        sig, params, _, generic_names = plain
        if len(values) != len(params):
            raise _Slow  # a default relied upon is a finding (E060) in either profile
        declared = builder.declared
        dtypes = builder.dtypes
        dtype: str | None = None
        if sig.generic:
            if type_arg is not None:
                dtype = type_arg
            else:
                for name in generic_names:
                    dtype = builder._dtype_of(values[name])
                    if dtype is not None:
                        break
                if dtype is None:
                    dtype = sig.generic_default
                if dtype is None:
                    raise _Slow
        elif type_arg is not None:
            raise _Slow
        if type_arg is None and sig.name in TYPE_DECLARATIONS:
            raise _Slow  # E062
        typed = self._typed.get((sig.name, dtype))
        if typed is None:
            typed = self._typed[sig.name, dtype] = self._typing(builder, sig, dtype)
        tensor_checks, attribute_checks, tensor_names, attribute_names, automatic, result_types = typed
        _require_clean(tensor_checks, values, dtypes)
        inputs = {name: values[name] for name in tensor_names}
        attribs = {name: values[name] for name in attribute_names}
        clean_key = (sig.name, dtype, attributes)
        if attributes is None or clean_key not in self._clean_attributes:
            _require_clean(attribute_checks, values, dtypes)
            for name in automatic:
                if attribs[name] == []:
                    raise _Slow
            parsed = self._parsed.get(attributes) if attributes is not None else None
            if parsed is not None and all(kind is not _REF for _, _, kind in parsed):  # no tensor name in it
                if len(self._clean_attributes) >= 8192:
                    self._clean_attributes.clear()  # bounded: unique texts (labels) come and go
                self._clean_attributes.add(clean_key)
        if builder.sync_names and any(r in builder.sync_names for r in refs):
            raise _Slow
        if target in declared or (target in builder.params) != (sig.name == "external"):
            raise _Slow  # E011, E040, E042
        shapes = builder._quiet_infer(sig, inputs, attribs)
        if shapes is None:
            raise _Slow
        # proven clean: commit what the general path would have recorded
        builder.referenced.update(refs)
        file = self.file
        line, column = at
        declared[target] = _new_tuple(Span, (file, line, column, line, column + len(target)))
        (result, _item, elem), = result_types
        builder._add_tensor(target, elem, shapes[0])
        span = _new_tuple(Span, (file, op_at[0], op_at[1], close_at[0], close_at[1] + 1))
        builder.graph.operations.append(Operation(sig.name, inputs, attribs, {result.name: Ref(target)}, dtype,
                                                  span, frozenset(values)))

    def _matched(self, builder: GraphBuilder, i: int, match: Any) -> None:
        """Lower the statement entry i (matched whole by flatstatements.STATEMENT), reading
        its arguments as _statement reads them from tokens; _Slow (nothing changed) when it is
        not certainly clean."""
        _gap, target, op, type_text, positional, named, _close = match.groups()
        if target in _KEYWORDS or op in _KEYWORDS:
            raise _Slow  # a keyword is no identifier
        plain = self._plain_of(op)
        _sig, params, by_name, _ = plain
        type_arg = type_text.strip("<> \t") if type_text is not None else None
        values: dict[str, Any] = {}
        refs: list[str] = []
        tensors, declared = builder.graph.tensors, builder.declared
        if positional is not None:
            if "[" in positional or "'" in positional or '"' in positional:
                arguments = self._arguments(positional)
            else:  # names and numbers only, the commonest: no call, nothing remembered
                arguments = []
                numbers = _NUMBERS
                for written in positional.split(","):
                    written = written.strip(" \t")
                    known = numbers.get(written)
                    if known is not None:
                        arguments.append((known[0], None))
                    elif written in _KEYWORDS or written[0] == "-" or written[0] in "0123456789":
                        arguments += self._arguments(written)
                    else:
                        arguments.append((written, _REF))
            if len(arguments) > len(params):
                raise _Slow  # more than there are parameters
            for (param, attribute), (value, kind) in zip(params, arguments):
                if attribute:
                    raise _Slow  # a positional attribute
                if kind is _REF:
                    if value not in tensors or value not in declared:
                        raise _Slow  # undeclared (E010) or poisoned
                    refs.append(value)
                    value = Ref(value)
                elif kind is _LIST:
                    value = value.copy()
                values[param.name] = value
        if named is not None:
            for name, value, kind in self._arguments(named):
                if name not in by_name or name in values:
                    raise _Slow
                if kind is _REF:
                    if value not in tensors or value not in declared:
                        raise _Slow
                    refs.append(value)
                    value = Ref(value)
                elif kind is _LIST:
                    value = value.copy()
                values[name] = value
        elif positional is None:
            raise _Slow  # no argument: a syntax error the token path reports
        line, column = self.lines[i], self.cols[i]
        base = match.start(2)
        self._lower(builder, target, plain, type_arg, values, refs, (line, column),
                    (line, column + match.start(3) - base), (line, column + match.start(7) - base), named)

    def _arguments(self, text: str) -> Any:
        """The arguments written `text` (group 5 or 6 of a statement), read once per distinct
        text: (value, kind) of each positional one, (name, value, kind) of each named one;
        kind _REF: the value is a tensor name, _LIST: a list to copy, None: the value itself.
        _Slow for a keyword the token path does not read as a value (or as a name)."""
        found = self._parsed.get(text)
        if found is not None:
            return found
        items: list[Any] = []
        for name, written in ARGUMENT.findall(text):
            first = written[0]
            kind: Any = None
            if first == "[":
                value: Any = [(_number(a), _number(b)) if a else _number(n) for a, b, n in ITEM.findall(written)]
                kind = _LIST
            elif first == "'" or first == '"':
                value = written[1:-1]
            elif first == "-" or first in "0123456789":
                value = _number(written)
            elif written in _KEYWORDS:
                if written != "true" and written != "false":
                    raise _Slow
                value = written == "true"
            else:
                value, kind = written, _REF
            if name:
                if name in _KEYWORDS:
                    raise _Slow
                items.append((name, value, kind))
            else:
                items.append((value, kind))
        found = tuple(items)
        if len(self._parsed) >= 8192:
            self._parsed.clear()  # bounded: unique texts (labels, tensor names) come and go
        self._parsed[text] = found
        return found

    def _tokenised(self, builder: GraphBuilder, i: int, match: Any) -> None:
        """Statement entry i, which is not certainly clean, read from its tokens (_statement,
        else the flat parser and the general lowering) exactly as if it had never been
        matched whole: its own tokens stand in for the entry while it is read."""
        base = match.start(2)
        texts, kinds, starts, _rest = _tokenise(match.string[base:match.end()], _Kinds())
        line, column = self.lines[i], self.cols[i]
        saved = self.texts, self.kinds, self.lines, self.cols
        self.texts, self.kinds = texts + [""], kinds + ["eof"]
        self.lines = [line] * len(self.texts)
        self.cols = [column + offset for offset in starts.tolist()] + [column + match.end() - base]
        try:
            try:
                end = self._statement(builder, 0)
            except _Slow:
                self.i = 0
                self._general(builder, self._assignment())
                end = self.i
            if end != len(texts):
                raise _GiveUp  # the entry is not one statement
        finally:
            self.texts, self.kinds, self.lines, self.cols = saved
        self.i = i + 1

    @staticmethod
    def _typing(builder: GraphBuilder, sig: FragmentSig, dtype: str | None) -> tuple[Any, ...]:
        """What _lower needs of (fragment, type), read once per graph: per tensor and per
        attribute parameter (name, fast validator, allowed enum values), the tensor and
        attribute parameter names, the attributes automatic when empty, the result types."""
        checks = builder._type_checks(sig, dtype)
        tensor_checks = tuple((param.name, fast, allowed) for param, _, fast, allowed in checks if not param.is_attribute)
        attribute_checks = tuple((param.name, fast, allowed) for param, _, fast, allowed in checks if param.is_attribute)
        attribute_names = tuple(p.name for p in sig.attribute_params)
        return (tensor_checks, attribute_checks, tuple(p.name for p in sig.tensor_params), attribute_names,
                tuple(n for n in attribute_names if n in AUTOMATIC_WHEN_EMPTY), tuple(builder._result_types(sig, dtype)))

    def _value_at(self, j: int, builder: GraphBuilder, refs: list[str]) -> tuple[Any, int]:
        """The value of the argument at token j (what the general path's _eval gives), and
        the token after it; tensor names read go to `refs` (committed only on success)."""
        kind, text = self.kinds[j], self.texts[j]
        if kind == "num":
            known = _NUMBERS.get(text)
            if known is None:
                known = (self._number(j).value, None)  # fills the cache (or raises LimitExceeded)
            return known[0], j + 1
        if kind == "id":
            texts = self.texts
            if texts[j + 1] == "(" or self.kinds[j + 1] == "typ":
                raise _Slow
            if text not in builder.graph.tensors or text not in builder.declared:
                raise _Slow  # undeclared (E010) or poisoned
            refs.append(text)
            return Ref(text), j + 1
        if kind == "str":
            return text[1:-1], j + 1
        if kind == "kw" and (text == "true" or text == "false"):
            return text == "true", j + 1
        if kind == "punct":
            if text == "-" and self.kinds[j + 1] == "num":
                value, after = self._value_at(j + 1, builder, refs)
                if type(value) not in (int, float):
                    raise _Slow
                return -value, after
            if text == "[" or text == "(":
                closing = "]" if text == "[" else ")"
                items = []
                j += 1
                texts, kinds = self.texts, self.kinds
                if text == "(" or texts[j] != "]":
                    while True:
                        known = _NUMBERS.get(texts[j]) if kinds[j] == "num" else None
                        if known is not None:  # numbers, the bulk of attribute arrays, without a call
                            items.append(known[0])
                            j += 1
                        else:
                            value, j = self._value_at(j, builder, refs)
                            items.append(value)
                        if texts[j] == "," and kinds[j] == "punct":
                            j += 1
                            continue
                        break
                if texts[j] != closing or kinds[j] != "punct":
                    raise _Slow
                if text == "(":
                    if len(items) < 2:
                        raise _Slow
                    return tuple(items), j + 1
                return items, j + 1
        raise _Slow


def check_flat(text: str, file: str, profile: str) -> tuple[list[Graph], list[Finding], ast.Document] | None:
    """Graphs, findings (before profiles and sorting) and the document header (graph
    bodies left empty) of a flat document; None when the ordinary path must run."""
    try:
        checker = _StreamingChecker(text, file)
        checker.profile = profile
        header = checker.document()
    except (_GiveUp, IndexError, RecursionError, limits.LimitExceeded):
        return None
    return checker.graphs, checker.findings, header
