"""PNML documents validate against the published RELAX NG grammar; DOT and SVG outputs."""

from __future__ import annotations

import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest


from tests.petri.petri_helpers import BRANCH3, BRANCH3_ITEMS, DATA, LENET

from pipeline.petri.dot import dot_document, render_svg, write_dot
from pipeline.petri.load import load_graphs
from pipeline.petri.pipelining import periodic_net
from pipeline.petri.pnml import NAMESPACE, PTNET, pnml_document, write_pnml
from pipeline.petri.translate import translate

GRAMMAR = DATA / "pnml-grammar"
GRAMMAR_URL = "http://www.pnml.org/version-2009/grammar/"


def nets():
    for path in (LENET, BRANCH3, BRANCH3_ITEMS):
        graphs, _ = load_graphs([path])
        for encoding in ("ours", "paper"):
            yield f"{path.stem}-{encoding}", translate(graphs, encoding)
    graphs, _ = load_graphs([BRANCH3_ITEMS])
    yield "branch3-periodic", periodic_net(translate(graphs), 2)


@pytest.fixture(scope="module")
def relaxng():
    etree = pytest.importorskip("lxml.etree", reason="lxml (PyPI) validates RELAX NG")

    class Local(etree.Resolver):
        """The grammar's includes name pnml.org URLs: read the copies stored in tests/petri/data."""

        def resolve(self, url, pubid, context):  # noqa: ANN001
            if url.startswith(GRAMMAR_URL):
                return self.resolve_filename(str(GRAMMAR / url[len(GRAMMAR_URL):]), context)
            return None

    parser = etree.XMLParser(no_network=True)
    parser.resolvers.add(Local())
    return etree, etree.RelaxNG(etree.parse(str(GRAMMAR / "ptnet.pntd"), parser))


@pytest.mark.parametrize("name,net", list(nets()), ids=[n for n, _ in nets()])
def test_pnml_validates_against_the_ptnet_grammar(relaxng, name: str, net) -> None:  # noqa: ANN001
    etree, schema = relaxng
    document = etree.fromstring(pnml_document(net).encode("utf-8"))
    assert schema.validate(document), (name, schema.error_log.last_error)


def test_the_grammar_rejects_a_broken_document(relaxng) -> None:  # noqa: ANN001
    etree, schema = relaxng
    graphs, _ = load_graphs([LENET])
    text = pnml_document(translate(graphs)).replace("<inscription>\n          <text>1</text>", "<inscription>\n          <text>0</text>", 1)
    assert not schema.validate(etree.fromstring(text.encode("utf-8")))


def test_pnml_structure_ids_and_markings(tmp_path: Path) -> None:
    graphs, _ = load_graphs([BRANCH3_ITEMS])
    net = translate(graphs)
    path = write_pnml(net, tmp_path / "net.pnml")
    text = path.read_text()
    assert text == pnml_document(translate(load_graphs([BRANCH3_ITEMS])[0]))   # deterministic
    root = ET.fromstring(text)
    ns = {"p": NAMESPACE}
    net_el = root.find("p:net", ns)
    assert net_el is not None and net_el.get("type") == PTNET
    ids = [e.get("id") for e in root.iter() if e.get("id")]
    assert len(ids) == len(set(ids))
    places = net_el.findall("p:page/p:place", ns)
    transitions = net_el.findall("p:page/p:transition", ns)
    arcs = net_el.findall("p:page/p:arc", ns)
    assert (len(places), len(transitions), len(arcs)) == (25, 11, 36)
    marked = sum(int(p.find("p:initialMarking/p:text", ns).text) for p in places if p.find("p:initialMarking", ns) is not None)
    assert marked == 13
    colours = {p.find("p:toolspecific/p:colour", ns).text for p in places}
    assert colours == {"ITEM1", "ITEM2", "ITEM3"}
    final = net_el.findall("p:toolspecific/p:finalMarking/p:place", ns)
    assert [(f.get("idref"), f.get("tokens")) for f in final] == [("p.ITEM1.out.output", "1")]
    known = set(ids)
    assert all(a.get("source") in known and a.get("target") in known for a in arcs)


def test_dot_colours_items_and_svg_is_rendered_or_skipped(tmp_path: Path) -> None:
    graphs, _ = load_graphs([BRANCH3_ITEMS])
    net = translate(graphs)
    text = dot_document(net)
    for item in ("ITEM1", "ITEM2", "ITEM3"):
        assert f'subgraph "cluster_{item}"' in text
    assert '"sync.ITEM1.s1" [shape=box, style="filled,dashed"' in text
    dot = write_dot(net, tmp_path / "net.dot")
    note = render_svg(net, dot, tmp_path / "net.svg")
    if shutil.which("dot") is None:
        assert note is not None and "not installed" in note and not (tmp_path / "net.svg").exists()
    else:
        assert note is None and (tmp_path / "net.svg").read_text().lstrip().startswith("<?xml")
    assert "too many" in (render_svg(net, dot, tmp_path / "big.svg", node_limit=10) or "")
