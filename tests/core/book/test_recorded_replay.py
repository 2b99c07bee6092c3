"""Decisions recorded by an earlier version of the JobBook replay to the same decisions through today's.

The logs in data/ were written on 2026-11-29 by the code of 889dc0d, before the JobBook was split
(issue: room to grow): `plastic run` of the bundled scatter-gather on the local cluster with spot
interruptions (60 an hour, 5 s notices, seed 7), and two SIGKILLed-then-resumed runs of the resume
tests (one adopting the killed leader's tasks, one killing them).  A refactor that changes what the
book decides for the same events fails here, by the first event whose decisions differ.
"""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

import pytest

from plastic.core.book.replay import replay

DATA = Path(__file__).parent / "data"
LOGS = {  # file: (books, kinds of records the log must hold, so the replay covers them)
    "decisions-interrupted.jsonl.gz": (1, {"requeue", "drain_kill", "agent_lost", "ended"}),
    "decisions-resumed-adopting.jsonl.gz": (2, {"orphan_adopted", "orphan_ended"}),
    "decisions-resumed-killing.jsonl.gz": (2, {"orphan_kill", "orphan_ended"}),
}


def _entries(name: str) -> list[dict]:
    with gzip.open(DATA / name, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


@pytest.mark.parametrize("name", sorted(LOGS))
def test_a_recorded_run_replays_to_the_same_decisions(name):
    books, kinds = LOGS[name]
    entries = _entries(name)
    held = Counter(e.get("kind") for e in entries)
    assert kinds <= set(held), f"{name} lacks {kinds - set(held)}"
    result = replay(entries)
    assert result.books == books and result.events > 30 and result.decisions > 60, result
    assert not result.mismatches, result.mismatches[0]


def test_a_changed_decision_is_found():
    """The check can fail: one logged record altered is a mismatch at its event."""
    entries = _entries("decisions-interrupted.jsonl.gz")
    i = next(i for i, e in enumerate(entries) if e.get("kind") == "requeue")
    entries[i] = {**entries[i], "counted_as": "lost" if entries[i].get("counted_as") != "lost" else "preempted"}
    assert replay(entries).mismatches
