"""Negative cases: each defect is rejected by the right analysis with the right counterexample."""

from __future__ import annotations

import copy

import pytest


from tests.petri.petri_helpers import BRANCH3, BRANCH3_ITEMS, graphs_of, paper_barrier_schedule

from pipeline.petri.analysis import analyse
from pipeline.petri.equivalence import check_equivalence
from pipeline.petri.load import load_graphs
from pipeline.petri.pipelining import check_pipeline
from pipeline.petri.schedule import check_schedule, default_schedule, parse_schedule
from pipeline.petri.trace import Event, Trace, replay
from pipeline.petri.translate import translate
from pipeline.petri.verify import verify

ITEMS = BRANCH3_ITEMS.read_text()


def original_net():
    return translate(load_graphs([BRANCH3])[0])


def split_net(text: str):
    return translate(graphs_of(text))


CYCLIC = """version 1.0;
graphitem A ga( e, s2 ) -> ( s1, out )
{
    e = external<scalar>(shape = [1, 4]);
    s1 = variablesync<scalar>(shape = [1, 4]);
    s2 = variablesync<scalar>(shape = [1, 4]);
    b = get_var(B, s2);
    a = add(e, b);
    s1 = send_var([B], a);
    out = relu(a);
}
graphitem B gb( s1 ) -> ( s2 )
{
    s1 = variablesync<scalar>(shape = [1, 4]);
    s2 = variablesync<scalar>(shape = [1, 4]);
    x = get_var(A, s1);
    y = relu(x);
    s2 = send_var([A], y);
}
"""


def test_a_cyclic_exchange_between_two_items_deadlocks() -> None:
    net = split_net(CYCLIC)
    outcomes = analyse(net)
    deadlock = outcomes["deadlock"]
    assert not deadlock.ok and deadlock.code == "PETRI-E103"
    cycle = deadlock.counterexample["cycles"][0]
    assert len(cycle) == 4 and any(c.startswith("sync s1") for c in cycle) and any(c.startswith("sync s2") for c in cycle)
    assert "add a" in " ".join(cycle) and "relu y" in " ".join(cycle)
    assert deadlock.counterexample["blocked_count"] == 5   # add, sync s1, relu y, sync s2, relu out
    assert not outcomes["reachability"].ok and not outcomes["once"].ok
    # the tokens of e wait for add forever
    assert any(left["variable"] == "e" for left in outcomes["termination"].counterexample["leftover"])
    # the schedules (program order) deadlock too: each item waits at its get for the other
    schedule = check_schedule(net, default_schedule(net))
    assert schedule.code == "PETRI-E122" and sorted(schedule.counterexample["cycle"]) == ["A", "B"]


def test_a_get_var_with_no_writer_is_a_missing_producer() -> None:
    text = ITEMS.replace("s1 = send_var([ITEM2, ITEM3], o1);", "s1 = send_var([ITEM2], o1);")
    net = split_net(text)
    deadlock = analyse(net)["deadlock"]
    assert deadlock.code == "PETRI-E102"
    missing = deadlock.counterexample["missing_producers"][0]
    assert missing["item"] == "ITEM3" and missing["variable"] == "o1"
    assert "get_var(ITEM1, s1) in ITEM3" in missing["why"] and "no send_var of s1 naming ITEM3" in missing["why"]
    assert missing["readers"][0].startswith("conv o4 (ITEM3")
    assert "conv o4 (ITEM3" in deadlock.reason
    # o4, o5, sync s3, o6, o7, out never fire
    assert deadlock.counterexample["blocked_count"] == 6
    assert check_equivalence(net, original_net()).code == "PETRI-E112"


def test_a_get_var_naming_an_item_not_given() -> None:
    item3 = "version 1.0;\n" + "graphitem ITEM3" + ITEMS.split("graphitem ITEM3")[1]
    deadlock = analyse(split_net(item3))["deadlock"]
    assert deadlock.code == "PETRI-E102"
    assert "(not among the items given)" in deadlock.counterexample["missing_producers"][0]["why"]


def test_a_sync_that_delivers_the_wrong_variable() -> None:
    text = ITEMS.replace("s2 = send_var([ITEM1], o3);", "s2 = send_var([ITEM1], o2);")
    net = split_net(text)
    equivalence = check_equivalence(net, original_net())
    assert equivalence.code == "PETRI-E112"
    first = equivalence.counterexample["differences"][0]
    assert first["instruction"] == "o6" and first["argument"] == 1
    assert "'o2' computed by instruction o2 delivered through sync s2 (ITEM2 -> ITEM1)" in first["message"]
    assert "in the original it is 'o3' computed by instruction o3" in first["message"]
    # and the net itself keeps o3's token: dead code
    termination = analyse(net)["termination"]
    assert termination.code == "PETRI-E104" and termination.counterexample["leftover"][0]["variable"] == "o3"


def test_a_send_to_an_item_that_never_reads_it() -> None:
    text = ITEMS.replace("s2 = send_var([ITEM1], o3);", "s2 = send_var([ITEM1, ITEM3], o3);")
    text = text.replace("graphitem ITEM3 dnn3( s1 ) -> ( s3 )", "graphitem ITEM3 dnn3( s1, s2 ) -> ( s3 )")
    text = text.replace("    s3 = variablesync<scalar>(shape = [1, 4, 16, 16]);\n    o1 = get_var(ITEM1, s1);\n    o4",
                        "    s3 = variablesync<scalar>(shape = [1, 4, 16, 16]);\n"
                        "    s2 = variablesync<scalar>(shape = [1, 4, 16, 16]);\n    o1 = get_var(ITEM1, s1);\n    o4")
    net = split_net(text)
    termination = analyse(net)["termination"]
    assert termination.code == "PETRI-E104"
    assert "sent to ITEM3, which never reads it" in termination.reason
    assert check_equivalence(net, original_net()).code == "PETRI-E113"


def test_an_instruction_missing_duplicated_or_changed() -> None:
    original = original_net()
    dropped = ITEMS.replace("    o2 = conv(o1, v3, v4", "    o2 = relu(o1);\n    o2x = conv(o1, v3, v4")
    assert check_equivalence(split_net(dropped), original).code == "PETRI-E110"
    changed = ITEMS.replace("o4 = conv(o1, v7, v8, border = 'constant', padding = [(1, 1), (1, 1)]",
                            "o4 = conv(o1, v7, v8, border = 'constant', padding = [(2, 0), (1, 1)]")
    outcome = check_equivalence(split_net(changed), original)
    assert outcome.code == "PETRI-E111" and "conv o4 (ITEM3" in outcome.reason


def barrier_schedule(doc):
    return parse_schedule(doc, "schedule.json")


def test_the_papers_barrier_schedule_is_deadlock_free() -> None:
    net = split_net(ITEMS)
    assert check_schedule(net, barrier_schedule(paper_barrier_schedule())).ok


def test_a_per_item_order_that_deadlocks_under_barriers_although_the_dataflow_is_acyclic() -> None:
    net = split_net(ITEMS)
    assert analyse(net)["deadlock"].ok   # the dataflow is fine
    doc = paper_barrier_schedule()
    items = doc["items"]
    # ITEM1 sends s1 only after barrier 2; ITEM2 waits for s1 before barrier 2
    items["ITEM1"] = [items["ITEM1"][0], items["ITEM1"][1], items["ITEM1"][3], items["ITEM1"][2]] + items["ITEM1"][4:]
    items["ITEM2"] = [items["ITEM2"][0], items["ITEM2"][2], items["ITEM2"][1]] + items["ITEM2"][3:]
    outcome = check_schedule(net, barrier_schedule(doc))
    assert outcome.code == "PETRI-E122"
    cex = outcome.counterexample
    assert cex["positions"]["ITEM1"] == 2 and cex["positions"]["ITEM2"] == 1
    assert "waits at step 1 (get o1 = s1 from ITEM1) for ITEM1 to send s1" in cex["waits"]["ITEM2"]
    assert "waits at step 2 (barrier 2) for ITEM2" in cex["waits"]["ITEM1"]
    assert sorted(cex["cycle"]) == ["ITEM1", "ITEM2"]
    # the same orders without barriers, under events, are fine
    events = copy.deepcopy(doc)
    events["sync"] = "event"
    events["items"] = {i: [s for s in steps if s["kind"] != "barrier"] for i, steps in events["items"].items()}
    assert check_schedule(net, barrier_schedule(events)).ok


def test_barrier_schedules_must_agree_and_separate_sends_from_gets() -> None:
    net = split_net(ITEMS)
    doc = paper_barrier_schedule()
    doc["items"]["ITEM3"] = [s for s in doc["items"]["ITEM3"] if s.get("id") != 2]
    assert check_schedule(net, barrier_schedule(doc)).code == "PETRI-E123"
    doc = paper_barrier_schedule()
    items = doc["items"]
    items["ITEM2"] = [items["ITEM2"][0], items["ITEM2"][2], items["ITEM2"][1]] + items["ITEM2"][3:]   # get s1 before barrier 2
    items["ITEM3"] = [items["ITEM3"][0], items["ITEM3"][2], items["ITEM3"][1]] + items["ITEM3"][3:]
    outcome = check_schedule(net, barrier_schedule(doc))
    assert outcome.code == "PETRI-E124" and "no barrier between them" in outcome.reason


def test_schedule_coverage_and_local_order() -> None:
    net = split_net(ITEMS)
    doc = default_schedule(net).to_json()
    missing = copy.deepcopy(doc)
    del missing["items"]["ITEM2"][2]
    outcome = check_schedule(net, parse_schedule(missing))
    assert outcome.code == "PETRI-E120" and "conv o3 (ITEM2" in outcome.reason
    swapped = copy.deepcopy(doc)
    steps = swapped["items"]["ITEM2"]
    steps[1], steps[2] = steps[2], steps[1]
    outcome = check_schedule(net, parse_schedule(swapped))
    assert outcome.code == "PETRI-E121"
    assert outcome.reason.startswith("ITEM2 step 1 (compute o3 (conv)) reads o2, which step 2 (compute o2 (conv))")


def _default_trace(net):
    """Every item runs its program order, one step after the other (valid)."""
    schedule = default_schedule(net)
    items = {}
    for item, steps in schedule.items.items():
        events = []
        for k in range(len(steps)):
            events += [Event("start", k), Event("end", k)]
        items[item] = events
    return schedule, Trace(items)


def test_a_trace_with_a_consumer_starting_before_its_producer_ended() -> None:
    net = split_net(ITEMS)
    schedule, trace = _default_trace(net)
    assert replay(net, schedule, trace).ok
    item1 = trace.items["ITEM1"]
    trace.items["ITEM1"] = [item1[0], item1[2], item1[1]] + item1[3:]   # start o1, start send s1, end o1
    outcome = replay(net, schedule, trace)
    assert outcome.code == "PETRI-E131"
    assert outcome.reason == ("ITEM1 event 1 (start step 1: send s1 = o1 to ITEM2, ITEM3) started before its producer "
                              "step 0 (compute o1 (conv), which produces o1) ended")


def test_a_trace_whose_items_cannot_be_ordered_globally() -> None:
    net = split_net(ITEMS)
    schedule, trace = _default_trace(net)
    # shared clock: ITEM2's get of s1 ends before ITEM1 even started sending it
    timed = Trace({item: [Event(e.event, e.step, 0, 100 + 10 * i) for i, e in enumerate(evs)]
                   for item, evs in trace.items.items()}, "shared")
    timed.items["ITEM2"] = [Event(e.event, e.step, 0, i) for i, e in enumerate(timed.items["ITEM2"])]
    outcome = replay(net, schedule, timed)
    assert outcome.code == "PETRI-E132" and "a get cannot end before its send started (s1)" in outcome.reason
    # per-item clocks: the deadlocking barrier orders, logged as if they had completed
    doc = paper_barrier_schedule()
    items = doc["items"]
    items["ITEM1"] = [items["ITEM1"][0], items["ITEM1"][1], items["ITEM1"][3], items["ITEM1"][2]] + items["ITEM1"][4:]
    items["ITEM2"] = [items["ITEM2"][0], items["ITEM2"][2], items["ITEM2"][1]] + items["ITEM2"][3:]
    bad = barrier_schedule(doc)
    logs = Trace({item: [Event(kind, k) for k in range(len(steps)) for kind in ("start", "end")]
                  for item, steps in bad.items.items()})
    outcome = replay(net, bad, logs)
    assert outcome.code == "PETRI-E132" and "form a cycle" in outcome.reason
    assert any("barrier 2" in step for step in outcome.counterexample["problems"][0]["cycle"])


def test_trace_shape_errors_are_failures_of_the_trace() -> None:
    net = split_net(ITEMS)
    schedule, trace = _default_trace(net)
    del trace.items["ITEM3"]
    assert replay(net, schedule, trace).code == "PETRI-E130"
    schedule, trace = _default_trace(net)
    trace.items["ITEM2"] = trace.items["ITEM2"][:-1]
    outcome = replay(net, schedule, trace)
    assert outcome.code == "PETRI-E130" and "never ended" in outcome.reason
    schedule, trace = _default_trace(net)
    trace.items["ITEM2"] = [Event("start", 1)] + trace.items["ITEM2"]
    assert replay(net, schedule, trace).code in ("PETRI-E130", "PETRI-E131")


@pytest.mark.parametrize("depth", [1, 2, 4])
def test_pipelined_nets_are_live_and_bounded_by_the_depth(depth: int) -> None:
    items, _ = load_graphs([BRANCH3_ITEMS])
    net = translate(items)
    outcome = check_pipeline(net, depth, default_schedule(net))
    assert outcome.ok and outcome.measured["value_place_bound"] == depth
    # ITEM1 runs head and tail in one loop: it cannot be an inference ahead of itself
    assert outcome.measured["sync_buffer_bound"] == 1


def test_pipeline_depth_zero_and_dead_code_are_rejected() -> None:
    items, _ = load_graphs([BRANCH3_ITEMS])
    net = translate(items)
    outcome = check_pipeline(net, 0)
    assert outcome.code == "PETRI-E140" and "carries no token" in outcome.reason
    dead = ITEMS.replace("s2 = send_var([ITEM1], o3);", "s2 = send_var([ITEM1], o2);")
    outcome = check_pipeline(split_net(dead), 2)
    assert outcome.code == "PETRI-E141" and "o3" in outcome.reason


def test_verify_collects_every_verdict_for_the_command() -> None:
    result = verify(graphs_of(CYCLIC))
    assert not result.ok
    assert result.analyses["equivalence"].verdict.value == "not run"
    assert result.analyses["trace"].verdict.value == "not run"


def _barrier_trace(leave_early: bool = False) -> Trace:
    """A shared-clock trace of the paper's barrier schedule (times in ns)."""
    def steps(spans):
        return [Event(kind, k, 0, t) for k, (a, b) in enumerate(spans) for kind, t in (("start", a), ("end", b))]
    item1 = [(0, 10), (20, 30), (40, 50), (60, 70), (75, 170), (180, 190), (200, 210), (220, 230), (240, 250), (260, 270)]
    item2 = [(0, 10), (55, 58 if leave_early else 70), (80, 90), (100, 110), (120, 130), (140, 150), (160, 170)]
    item3 = [(0, 10), (55, 70), (81, 91), (101, 111), (121, 131), (141, 151), (161, 170)]
    return Trace({"ITEM1": steps(item1), "ITEM2": steps(item2), "ITEM3": steps(item3)}, "shared")


def test_a_shared_clock_trace_must_respect_the_barriers() -> None:
    net = split_net(ITEMS)
    schedule = barrier_schedule(paper_barrier_schedule())
    assert replay(net, schedule, _barrier_trace()).ok
    outcome = replay(net, schedule, _barrier_trace(leave_early=True))
    assert outcome.code == "PETRI-E132"
    assert outcome.reason == ("ITEM2 event 3 (end barrier 2) at t=58 leaves barrier 2 before ITEM1 event 6 (start barrier 2) "
                              "reached it at t=60")


def test_per_item_logs_of_schedules_that_wait_for_each_other_form_a_cycle() -> None:
    """Event sync, per-item clocks, no barrier: the decision without the event graph (trace._explained)
    says no global order, and the graph built for the description names the cycle of gets and sends."""
    net = split_net(CYCLIC)
    schedule = default_schedule(net)
    logs = Trace({item: [Event(kind, k) for k in range(len(steps)) for kind in ("start", "end")]
                  for item, steps in schedule.items.items()})
    outcome = replay(net, schedule, logs)
    assert outcome.code == "PETRI-E132" and "form a cycle" in outcome.reason
    cycle = outcome.counterexample["problems"][0]["cycle"]
    assert sum("a get cannot end before its send started" in step for step in cycle) == 2
    valid_net = split_net(ITEMS)   # the acyclic case decided by the same walk passes
    valid, trace = _default_trace(valid_net)
    assert replay(valid_net, valid, trace).ok
