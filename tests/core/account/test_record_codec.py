"""Every record the JobBook and the elastic controller write, stored and read back (plastic.core.account.
record_codec.decode): from a line of the decisions log (JSON) and from an entry of the run's Redis stream
(strings), each comes back equal to itself; what no writer wrote is an UnknownRecord, never an error."""

from __future__ import annotations

import json
import types
import typing
from collections.abc import Mapping
from dataclasses import fields
from enum import Enum
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plastic.core.account.picture import build_picture
from plastic.core.account.progress import Progress
from plastic.core.account.record_codec import (
    BOOK_RECORDS,
    ELASTIC_RECORDS,
    BookBegan,
    UnknownRecord,
    decode,
)
from plastic.core.account.report import RunEvent, RunTally
from plastic.core.book import records as book_records
from plastic.core.book.records import AttemptEnded, JobQueued, OrphanEnded, Record
from plastic.core.elastic import model as elastic_model
from plastic.core.elastic.model import NodeCordoned
from plastic.core.model import TaskUsage
from plastic.framework.recorder import JsonLinesRecorder, record_line
from plastic.framework.store_recorder import StoreRecorder
from plastic.report.picture import parse_decisions
from plastic.store.records import Event
from plastic.store.records import encode as stream_value

WRITTEN = (*BOOK_RECORDS, *ELASTIC_RECORDS)


def defined_records(module: Any) -> set[type]:
    return {obj for obj in vars(module).values() if isinstance(obj, type) and issubclass(obj, Record)
            and obj is not Record and obj.__module__ == module.__name__}


def test_decode_knows_every_record_the_book_and_the_controller_define():
    assert set(BOOK_RECORDS) == defined_records(book_records)
    assert set(ELASTIC_RECORDS) == defined_records(elastic_model)


# ------------------------------------------------------------------ records of every kind, any values

TEXT = st.one_of(st.text(st.characters(blacklist_categories=("Cs",))),
                 st.from_regex(r"-?[0-9]{1,12}(\.[0-9]{1,4})?", fullmatch=True),  # text that looks like JSON
                 st.sampled_from(["true", "false", "null", "[]", "[\"1\"]", "{}", "1e5"]))
JSON_VALUE = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | TEXT,
                          lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
                          max_leaves=8)
FIXED: dict[tuple[type, str], st.SearchStrategy] = {  # what the class fixes, or its `fields` leaves out when empty
    (book_records.TerminateNoticed, "notice_kind"): st.just("terminate"),
    (book_records.RebalanceNoticed, "notice_kind"): st.just("rebalance"),
    (OrphanEnded, "reason"): st.none() | st.text(min_size=1),
}


def values(tp: Any) -> st.SearchStrategy:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        return st.one_of(*(st.none() if a is type(None) else values(a) for a in args))
    if origin is tuple:
        return st.lists(values(args[0]), max_size=4).map(tuple)
    if origin in (Mapping, dict):
        return st.dictionaries(TEXT, JSON_VALUE, max_size=4)
    if isinstance(tp, type) and issubclass(tp, Enum):
        return st.sampled_from(list(tp))
    if tp in (AttemptEnded, TaskUsage):
        return instances(tp)
    return {str: TEXT, int: st.integers(), float: st.floats(allow_nan=False), bool: st.booleans()}[tp]


def instances(cls: type) -> st.SearchStrategy:
    hints = typing.get_type_hints(cls)
    return st.builds(cls, **{f.name: FIXED[(cls, f.name)] if (cls, f.name) in FIXED else values(hints[f.name])
                             for f in fields(cls)})


def log_form(record: Record, at: float) -> tuple[str, dict[str, Any]]:
    """The record as the decisions log has it (JsonLinesRecorder's line, written and read back as JSON)."""
    doc = json.loads(json.dumps(record_line(record, at), default=str))
    kind = doc.pop("kind")
    doc.pop("t")
    return kind, doc


def stream_form(record: Record, at: float) -> tuple[str, dict[str, str]]:
    """The record as the run's Redis stream has it: the StoreRecorder's event (no None fields, and ``at``),
    every value a string as plastic.store writes it."""
    event = {k: v for k, v in record.fields.items() if v is not None}
    event["at"] = at
    entry = {"type": record.kind, **{k: stream_value(v) for k, v in event.items() if k != "type"}}
    read = Event.from_entry("1-0", entry)
    return read.type, read.fields


@pytest.mark.parametrize("cls", WRITTEN, ids=lambda cls: cls.__name__)
@settings(max_examples=40, deadline=None)
@given(data=st.data(), at=st.floats(0, 2e9))
def test_a_record_read_back_from_the_log_and_from_the_stream_equals_itself(cls, data, at):
    record = data.draw(instances(cls))
    for kind, stored in (log_form(record, at), stream_form(record, at)):
        assert kind == record.kind
        back = decode(kind, stored)
        assert back == record and type(back) is cls
    assert all(isinstance(v, str) for v in stream_form(record, at)[1].values())


def sample(tp: Any, name: str = "") -> Any:
    """A value of type ``tp`` (never None), the same every time."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        return sample(next(a for a in args if a is not type(None)), name)
    if origin is tuple:
        return (sample(args[0], name), "2")
    if origin in (Mapping, dict):
        return {"outcome": "finished", "exit_code": 0, "agent": None}
    if isinstance(tp, type) and issubclass(tp, Enum):
        return list(tp)[-1]
    if tp in (AttemptEnded, TaskUsage):
        return made(tp)
    return {str: f"{name}-1", int: 3, float: 1.25, bool: True}[tp]


def made(cls: type) -> Any:
    hints = typing.get_type_hints(cls)
    fixed = {"notice_kind": "rebalance" if cls is book_records.RebalanceNoticed else "terminate"}
    return cls(**{f.name: fixed.get(f.name) or sample(hints[f.name], f.name) for f in fields(cls)})


def one_of_each() -> list[Record]:
    """One record of every kind, with a value in every field."""
    return [made(cls) for cls in WRITTEN]


def test_the_writers_forms_are_what_the_round_trip_reads(tmp_path):
    """The real writers: the JSON-lines recorder's file read by `plastic report`'s parser, and the events the
    Redis recorder hands the store (the state moves are compare-and-sets, not events)."""
    records = one_of_each()
    recorder = JsonLinesRecorder(tmp_path / "decisions.jsonl")
    recorder.begin({"config": 1})
    recorder.step(None, 1.0, [r for r in records if type(r) in BOOK_RECORDS], [])
    recorder.step(None, 2.0, [r for r in records if type(r) in ELASTIC_RECORDS], [], machine="elastic")
    recorder.close()
    read = parse_decisions((tmp_path / "decisions.jsonl").read_text(), "decisions.jsonl")
    assert read[0].record == BookBegan({"config": 1})
    assert [ev.record for ev in read[1:]] == records

    class Writes:
        def __init__(self):
            self.events: list[tuple[str, Mapping[str, Any]]] = []

        def submit(self, writes):
            self.events += [w.args[1:] for w in writes if w.method == "append_event"]

    writer = Writes()
    StoreRecorder(store=None, run_id="r", writer=writer, clock=lambda: 5.0).step(None, 1.0, records, [])
    appended = [r for r in records if not isinstance(r, book_records.TaskStateChanged | book_records.AgentStateChanged)]
    assert [(kind, dict(fields)) for kind, fields in writer.events] == \
        [(r.kind, {**{k: v for k, v in r.fields.items() if v is not None}, "at": 5.0}) for r in appended]
    for kind, event in writer.events:
        entry = Event.from_entry("1-0", {"type": kind, **{k: stream_value(v) for k, v in event.items()}})
        assert decode(entry.type, entry.fields) in appended


# ------------------------------------------------------------------ what stored data really holds


def test_stream_strings_are_read_as_the_fields_declare():
    issued = decode("issued", {"job_id": "10", "vcpus": "2", "ram_mib": "1024", "preempt": "3", "tool": "1e5",
                               "instance_type": "null", "at": "1700000000.5"})
    assert issued == JobQueued("10", 2, 1024, "3", "null", "1e5")  # text stays text, whatever it looks like
    ended = decode("ended", {"job_id": "7", "outcome": "finished", "state": "FINISHED", "exit_code": "0",
                             "attempt": "1", "preemptible": "false", "wall_time_s": "3",
                             "usage": '{"cpu_s": 1, "max_rss_mib": 2.5, "wall_s": 3}'})
    assert (ended.exit_code, ended.preemptible, ended.wall_time_s, ended.usage) == (0, False, 3.0,
                                                                                   TaskUsage(1.0, 2.5, 3.0))
    assert ended.agent_id is None and ended.message is None  # None fields are not in the stream


def test_an_older_line_without_a_newer_field_gets_its_default():
    cordoned = decode("node_cordoned", {"node_id": "n-1", "idle_s": 60.0})  # before cordons said where
    assert cordoned == NodeCordoned("n-1", 60.0) and cordoned.cluster == ""
    ready = decode("node_ready", {"node_id": "n", "cluster": "c", "instance_type": "t", "market": "spot",
                                  "boot_s": 1.5})
    assert ready.seen_after_s == 0.0
    assert decode("orphan_ended", {"task": "1.1", "agent_id": "a", "state": "TASK_FINISHED", "adopted": True}) \
        == OrphanEnded("1.1", "a", "TASK_FINISHED", True)


def test_a_notice_is_a_terminate_notice_unless_it_says_otherwise():
    assert isinstance(decode("notice", {"agent_id": "a", "jobs": []}), book_records.TerminateNoticed)
    assert isinstance(decode("notice", {"agent_id": "a", "notice_kind": "rebalance"}), book_records.RebalanceNoticed)


def test_unknown_kinds_and_unreadable_values_are_unknown_records():
    assert decode("transition", {"kind": "task", "to": "RUNNING"}) == \
        UnknownRecord("transition", {"kind": "task", "to": "RUNNING"})
    bad = decode("placed", {"job_id": "1", "preemptions": "many"})
    assert isinstance(bad, UnknownRecord) and bad.kind == "placed" and "preemptions" in (bad.problem or "")
    bad = decode("task_state", {"job_id": "1", "to_state": "SIDEWAYS"})
    assert isinstance(bad, UnknownRecord) and "SIDEWAYS" in (bad.problem or "")
    again = UnknownRecord("transition", {"x": "1"})
    assert decode(*log_form(again, 1.0)) == again  # stored as it came


def test_the_readers_pass_over_what_they_do_not_know():
    events = [RunEvent("run_created", 0.0, {"workflow": "wf.cwl"}), RunEvent("transition", 1.0, {"to": "RUNNING"}),
              RunEvent("placed", 2.0, {"job_id": "1", "preemptions": "many"}),
              RunEvent("issued", 3.0, {"job_id": "1"}), RunEvent("ended", 4.0, {"job_id": "1", "outcome": "finished"})]
    tally, progress = RunTally(), Progress()
    for ev in events:
        tally.add(ev)
        progress.apply(ev)
    report = tally.report(run_id="r", workflow="w", outcome="succeeded", started_at=0.0, ended_at=5.0, agents=[])
    assert (report.tasks, report.tasks_finished, report.attempts) == (1, 1, 0)
    assert progress.finished == 1
    pic = build_picture(run_id="r", workflow="w", outcome="succeeded", started_at=0.0, ended_at=5.0, agents=[],
                        events=events)
    assert pic.attempts == ()


def test_a_log_with_the_controller_s_inputs_whole_reads_as_its_records():
    """The elastic controller's inputs (its configuration, every look's nodes, the provider's answers) are
    no records: `plastic report` reads a log that holds them as the records it holds, none unknown."""
    import gzip
    from collections import Counter
    from pathlib import Path

    recorded = Path(__file__).parents[1] / "elastic" / "data" / "decisions-elastic-interrupted.jsonl.gz"
    with gzip.open(recorded, "rt", encoding="utf-8") as f:
        text = f.read()
    read = parse_decisions(text, "decisions.jsonl")
    assert not [ev for ev in read if isinstance(ev.record, UnknownRecord)]
    kinds = Counter(ev.kind for ev in read)
    assert "elastic_event" not in kinds and "command" not in kinds
    written = Counter(json.loads(line)["kind"] for line in text.splitlines() if '"m": "elastic"' in line)
    assert {k: n for k, n in kinds.items() if k in written} == \
        {k: n for k, n in written.items() if k not in ("elastic_event", "command")}
