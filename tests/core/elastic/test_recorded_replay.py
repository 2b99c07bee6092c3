"""A recorded elastic run replays through the JobBook and the elastic controller to the same decisions.

data/decisions-elastic-interrupted.jsonl.gz is the decisions log of a real run, recorded again on
2026-11-29 when the controller began to release a node no work needs at once (the earlier recording,
of the looks logged whole, decided otherwise at its first such node): `plastic run` of
tests/chaos/data/square-sum (40 items, ``seconds: 4``, its plan.json) on the local cluster with
``--interrupt-rate 3 --notice-seconds 10 --idle-seconds 5 --seed 3 --boot-seconds 2 --max-nodes 5 --
--plasticElasticEverySeconds 1`` (a boot
lead, so the observation dates the plan's tasks and the running ones' ends too).  The controller asked
for nodes for expected work and to replace interrupted spot nodes, met a limit, cordoned and released
an idle node.  A change to the controller, its observation or the book that decides otherwise on the
same inputs fails here, at the first step that differs.  The book's older logs (tests/core/book/data),
written before the looks were logged whole, still replay: their elastic lines are skipped.
"""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

from plastic.core.book.replay import replay
from plastic.core.elastic.replay import replay_all

DATA = Path(__file__).parent / "data"
RECORDED = DATA / "decisions-elastic-interrupted.jsonl.gz"
OLDER = Path(__file__).parents[1] / "book" / "data" / "decisions-interrupted.jsonl.gz"
KINDS = {"node_requested", "node_created", "node_ready", "node_interrupted", "node_cordoned", "node_released",
         "growth_stopped"}


def entries(path: Path = RECORDED) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def test_the_recorded_run_replays_through_the_book_and_the_controller_to_the_same_decisions():
    log = entries()
    held = Counter(e["kind"] for e in log if e.get("m") == "elastic")
    assert KINDS <= set(held), f"the log lacks {KINDS - set(held)}"
    reasons = {e["reason"] for e in log if e["kind"] == "node_requested"}
    assert {"replace", "expected_work"} <= reasons, reasons
    result = replay_all(log)
    assert not result.mismatches, result.mismatches[0]
    book, elastic = result.book, result.elastic
    assert book.books == 1 and book.events > 200 and book.torn == 0
    assert (elastic.starts, elastic.skipped, elastic.torn) == (1, 0, 0)
    assert elastic.looks > 20 and elastic.answers >= 2 and elastic.decisions > 20
    assert book == replay(log)  # the book's side is the book's replay


def test_a_changed_controller_decision_is_a_mismatch_at_its_step():
    log = entries()
    i = next(i for i, e in enumerate(log) if e["kind"] == "node_released")
    log[i] = {**log[i], "reason": "idle for 99 s"}
    (mismatch,) = replay_all(log).mismatches
    assert mismatch.machine == "elastic" and mismatch.event["type"] == "NodesListed"
    assert [x for x in mismatch.replayed if x["kind"] == "node_released"] != \
        [x for x in mismatch.logged if x["kind"] == "node_released"]


def test_a_dropped_command_and_a_changed_look_are_mismatches_too():
    log = entries()
    i = next(i for i, e in enumerate(log) if e.get("m") == "elastic" and e["kind"] == "command"
             and e["command"]["type"] == "CreateNodes")
    assert replay_all(log[:i] + log[i + 1:]).elastic.mismatches
    log = entries()
    j = next(i for i, e in enumerate(log) if e["kind"] == "elastic_event" and e["event"]["type"] == "NodesListed"
             and log[i + 1]["kind"] == "node_ready")  # a look that saw a node come up
    log[j] = {**log[j], "event": {**log[j]["event"], "nodes": []}}  # ... sees no node at all
    assert replay_all(log).elastic.mismatches


def test_an_older_log_without_the_controller_s_inputs_still_replays_its_book():
    log = entries(OLDER)
    assert any(e.get("m") == "elastic" for e in log)  # the counts of its looks, and what they decided
    result = replay_all(log)
    assert not result.mismatches and result.book == replay(log)
    assert result.elastic.starts == result.elastic.looks == 0 and result.elastic.skipped > 0
