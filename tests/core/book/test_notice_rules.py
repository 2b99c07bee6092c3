"""The rules of which published spot notices count (plastic.core.book.notice_rules), pure."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from plastic.core.book.notice_rules import NotANotice, Notice, keep_unknown_until, notice_of, still_counts
from plastic.core.book.spot_events import INTERRUPTION_NOTICE_S

NOW = 1_000_000.0


def test_a_terminate_notice_takes_its_deadline():
    n = notice_of("1-0", {"kind": "terminate", "target": "agent:a1", "terminate_at": str(NOW + 30),
                          "source": "imds"}, NOW)
    assert n == Notice("terminate", "agent:a1", NOW + 30, "imds", "1-0")


def test_without_a_deadline_a_terminate_notice_ends_two_minutes_after_it_was_published():
    n = notice_of("1-0", {"kind": "terminate", "target": "instance:i-1", "published_at": str(NOW - 10)}, NOW)
    assert n.at == NOW - 10 + INTERRUPTION_NOTICE_S and n.deadline_assumed and n.source == "?"
    unpublished = notice_of("1-1", {"kind": "terminate", "target": "agent:a1", "terminate_at": "soon"}, NOW)
    assert unpublished.at == NOW + INTERRUPTION_NOTICE_S and unpublished.deadline_assumed


def test_a_rebalance_recommendation_takes_its_notice_time_else_when_it_was_published():
    assert notice_of("1-0", {"kind": "rebalance", "target": "agent:a", "notice_time": "5"}, NOW).at == 5.0
    assert notice_of("1-0", {"kind": "rebalance", "target": "agent:a", "noticed_at": "6"}, NOW).at == 6.0
    assert notice_of("1-0", {"kind": "rebalance", "target": "agent:a", "published_at": "7"}, NOW).at == 7.0
    assert notice_of("1-0", {"kind": "rebalance", "target": "agent:a"}, NOW).at == NOW


@pytest.mark.parametrize("fields", [{}, {"kind": "stop", "target": "agent:a"}, {"kind": "terminate", "target": "a"}])
def test_what_is_not_a_notice_says_why(fields):
    assert isinstance(notice_of("9-0", fields, NOW), NotANotice)


def test_of_the_history_only_terminate_notices_already_past_no_longer_count():
    past = Notice("terminate", "agent:a", NOW - 1, "s", "1-0")
    ahead = Notice("terminate", "agent:a", NOW + 1, "s", "1-0")
    old_rebalance = Notice("rebalance", "agent:a", NOW - 3600, "s", "1-0")
    assert not still_counts(past, NOW, from_history=True)
    assert still_counts(past, NOW, from_history=False)  # a new one is acted on: the book decides
    assert still_counts(ahead, NOW, from_history=True) and still_counts(old_rebalance, NOW, from_history=True)


def test_an_unknown_target_is_kept_until_its_deadline_and_a_grace_or_for_a_while():
    t = Notice("terminate", "agent:x", NOW + 50, "s", "1-0")
    r = Notice("rebalance", "agent:x", NOW - 5, "s", "1-0")
    assert keep_unknown_until(t, NOW, grace_s=5, keep_unknown_s=600) == NOW + 55
    assert keep_unknown_until(r, NOW, grace_s=5, keep_unknown_s=600) == NOW + 600


@given(st.dictionaries(st.sampled_from(["kind", "target", "terminate_at", "published_at", "notice_time", "source",
                                        "noticed_at"]), st.text(max_size=12)), st.floats(0, 2e9))
def test_any_entry_is_a_notice_or_says_why_and_never_raises(fields, now):
    n = notice_of("1-0", fields, now)
    assert isinstance(n, NotANotice) or (n.kind in ("terminate", "rebalance") and ":" in n.target)
