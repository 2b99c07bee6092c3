"""Which published spot notices count, and for how long, pure: the rules the notice follower's shell
(plastic.framework.notices) applies to each entry of the run's ``notices`` stream.

- An entry is a notice when its kind is ``terminate`` or ``rebalance`` and its target names an agent
  (``agent:<id>``) or an instance (``instance:<i-...>``); anything else is not one (its reason says why).
- A terminate notice's time is its ``terminate_at``; an entry without one is taken to end
  INTERRUPTION_NOTICE_S (AWS's two minutes) after it was published (``published_at``, else ``now``),
  and says so (``deadline_assumed``).  A rebalance recommendation's time is its ``notice_time`` (or
  ``noticed_at``), else when it was published.
- Of what was published before the follower started (its history), a terminate notice whose deadline
  has passed no longer counts (that machine is gone); every other notice still does (agent ids are
  never reused, so a recommendation for a live agent still holds).
- A notice for a target the framework does not know yet is kept and tried again until its deadline
  plus a grace (terminate), or for a while from now (rebalance).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from plastic.core.book.spot_events import INTERRUPTION_NOTICE_S

KINDS = ("terminate", "rebalance")


@dataclass(frozen=True, slots=True)
class Notice:
    kind: str
    target: str
    at: float  # terminate: the deadline; rebalance: when it was recommended (epoch seconds)
    source: str
    stream_id: str
    deadline_assumed: bool = False  # a terminate notice without terminate_at: at = published + 120 s


@dataclass(frozen=True, slots=True)
class NotANotice:
    stream_id: str
    reason: str


def notice_of(stream_id: str, fields: Mapping[str, str], now: float) -> Notice | NotANotice:
    """The notice an entry of the stream is, or why it is none."""
    kind, target = fields.get("kind", ""), fields.get("target", "")
    if kind not in KINDS or ":" not in target:
        return NotANotice(stream_id, f"kind {kind!r}, target {target!r}")
    published = _number(fields.get("published_at")) or now
    source = fields.get("source", "?")
    if kind == "terminate":
        at = _number(fields.get("terminate_at"))
        if at is None:
            return Notice(kind, target, published + INTERRUPTION_NOTICE_S, source, stream_id, deadline_assumed=True)
        return Notice(kind, target, at, source, stream_id)
    at = _number(fields.get("notice_time")) or _number(fields.get("noticed_at")) or published
    return Notice(kind, target, at, source, stream_id)


def still_counts(notice: Notice, now: float, *, from_history: bool) -> bool:
    """Whether a notice is acted on: all new ones; of the history, all but a terminate already past."""
    return not (from_history and notice.kind == "terminate" and notice.at <= now)


def keep_unknown_until(notice: Notice, now: float, *, grace_s: float, keep_unknown_s: float) -> float:
    """Until when a notice for a target the framework does not know (yet) is kept and tried again."""
    return notice.at + grace_s if notice.kind == "terminate" else now + keep_unknown_s


def _number(text: object) -> float | None:
    try:
        return float(text) if text not in (None, "") else None  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
