"""Mesos resources as the local master accounts them: named scalars and port ranges.

Scalars are kept in integer thousandths, as Mesos keeps them in fixed point, so
launching ten tasks of 0.1 cpus frees exactly one cpu again.  Names keep the
order they were first given in, because Mesos prints them in that order in
offers and in error messages.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

SCALE = 1000

Range = tuple[int, int]


class ResourceFormatError(ValueError):
    """A resource list from the wire is malformed."""


def _norm_ranges(ranges: Iterable[Range]) -> list[Range]:
    merged: list[Range] = []
    for begin, end in sorted(ranges):
        if end < begin:
            continue
        if merged and begin <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((begin, end))
    return merged


def _sub_ranges(have: list[Range], take: list[Range]) -> list[Range]:
    out: list[Range] = []
    for begin, end in have:
        pieces = [(begin, end)]
        for tb, te in take:
            nxt: list[Range] = []
            for pb, pe in pieces:
                if te < pb or tb > pe:
                    nxt.append((pb, pe))
                    continue
                if pb < tb:
                    nxt.append((pb, tb - 1))
                if te < pe:
                    nxt.append((te + 1, pe))
            pieces = nxt
        out.extend(pieces)
    return _norm_ranges(out)


def _ranges_contain(have: list[Range], want: list[Range]) -> bool:
    return all(any(hb <= wb and we <= he for hb, he in have) for wb, we in want)


def _fmt_number(milli: int) -> str:
    if milli % SCALE == 0:
        return str(milli // SCALE)
    return f"{milli / SCALE:.3f}".rstrip("0").rstrip(".")


class ResourceBag:
    """An immutable-by-convention bag of scalar and range resources."""

    __slots__ = ("ranges", "scalars")

    def __init__(self, scalars: Mapping[str, int] | None = None, ranges: Mapping[str, list[Range]] | None = None):
        self.scalars: dict[str, int] = {k: v for k, v in (scalars or {}).items() if v > 0}
        self.ranges: dict[str, list[Range]] = {k: v for k, v in (ranges or {}).items() if v}

    # ------------------------------------------------------------ construction
    @classmethod
    def of(cls, **values: float) -> ResourceBag:
        """Resources.of(cpus=1, mem=1024): scalars from plain numbers."""
        return cls({k: round(v * SCALE) for k, v in values.items()})

    @classmethod
    def from_json(cls, items: Any) -> ResourceBag:
        """Parse a Mesos `Resource` list (as found in TaskInfo.resources)."""
        if not isinstance(items, list):
            raise ResourceFormatError("'resources' must be a list")
        scalars: dict[str, int] = {}
        ranges: dict[str, list[Range]] = {}
        for item in items:
            if not isinstance(item, dict) or not isinstance(item.get("name"), str):
                raise ResourceFormatError("every resource needs a 'name'")
            name = item["name"]
            kind = item.get("type", "SCALAR")
            if kind == "SCALAR":
                try:
                    value = float(item["scalar"]["value"])
                except (KeyError, TypeError, ValueError):
                    raise ResourceFormatError(f"resource {name!r}: expecting 'scalar.value'") from None
                if value < 0 or math.isnan(value) or math.isinf(value):
                    raise ResourceFormatError(f"resource {name!r}: invalid scalar value {value}")
                scalars[name] = scalars.get(name, 0) + round(value * SCALE)
            elif kind == "RANGES":
                try:
                    got = [(int(r["begin"]), int(r["end"])) for r in item["ranges"]["range"]]
                except (KeyError, TypeError, ValueError):
                    raise ResourceFormatError(f"resource {name!r}: expecting 'ranges.range[].begin/end'") from None
                ranges[name] = _norm_ranges(ranges.get(name, []) + got)
            else:
                raise ResourceFormatError(f"resource {name!r}: type {kind} is not supported by the local cluster")
        return cls(scalars, ranges)

    # ------------------------------------------------------------ arithmetic
    def __add__(self, other: ResourceBag) -> ResourceBag:
        scalars = dict(self.scalars)
        for k, v in other.scalars.items():
            scalars[k] = scalars.get(k, 0) + v
        ranges = dict(self.ranges)
        for k, v in other.ranges.items():
            ranges[k] = _norm_ranges(ranges.get(k, []) + v)
        return ResourceBag(scalars, ranges)

    def __sub__(self, other: ResourceBag) -> ResourceBag:
        scalars = dict(self.scalars)
        for k, v in other.scalars.items():
            scalars[k] = max(0, scalars.get(k, 0) - v)
        ranges = dict(self.ranges)
        for k, v in other.ranges.items():
            if k in ranges:
                ranges[k] = _sub_ranges(ranges[k], v)
        return ResourceBag(scalars, ranges)

    def contains(self, other: ResourceBag) -> bool:
        """True when `other` fits inside this bag."""
        if any(self.scalars.get(k, 0) < v for k, v in other.scalars.items()):
            return False
        return all(_ranges_contain(self.ranges.get(k, []), v) for k, v in other.ranges.items())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ResourceBag) and self.scalars == other.scalars and self.ranges == other.ranges

    def __hash__(self) -> int:  # pragma: no cover - not used as a key
        return hash((tuple(sorted(self.scalars.items())), tuple(sorted((k, tuple(v)) for k, v in self.ranges.items()))))

    def __bool__(self) -> bool:
        return bool(self.scalars) or bool(self.ranges)

    def get(self, name: str) -> float:
        return self.scalars.get(name, 0) / SCALE

    def allocatable(self) -> bool:
        """Mesos' default minimum to make an offer: 0.01 cpus or 32 MiB of memory."""
        return self.scalars.get("cpus", 0) >= 10 or self.scalars.get("mem", 0) >= 32 * SCALE

    # ------------------------------------------------------------ output
    def to_json(self, *, role: bool = True, allocation_info: bool = False, ranges_first: bool = True) -> list[dict]:
        """The Mesos JSON list; offers put ranges first, agent_info puts them last."""
        out: list[dict] = []

        def extra(d: dict) -> dict:
            if role:
                d["role"] = "*"
            if allocation_info:
                d["allocation_info"] = {"role": "*"}
            return d

        range_items = [extra({"name": k, "type": "RANGES",
                              "ranges": {"range": [{"begin": b, "end": e} for b, e in v]}})
                       for k, v in self.ranges.items()]
        scalar_items = [extra({"name": k, "type": "SCALAR", "scalar": {"value": v / SCALE}})
                        for k, v in self.scalars.items()]
        out = range_items + scalar_items if ranges_first else scalar_items + range_items
        return out

    def describe(self) -> str:
        """Mesos' text form used in error messages: `cpus(allocated: *):1; mem(allocated: *):32`."""
        parts: list[str] = []
        for k, v in self.ranges.items():
            text = ",".join(f"{b}-{e}" for b, e in v)
            parts.append(f"{k}(allocated: *):[{text}]")
        parts.extend(f"{k}(allocated: *):{_fmt_number(v)}" for k, v in self.scalars.items())
        return "; ".join(parts)

    def ordered_like(self, template: ResourceBag) -> ResourceBag:
        """The same amounts, names in the order of `template` (then any others)."""
        scalars = {k: self.scalars[k] for k in template.scalars if k in self.scalars}
        scalars.update({k: v for k, v in self.scalars.items() if k not in scalars})
        ranges = {k: self.ranges[k] for k in template.ranges if k in self.ranges}
        ranges.update({k: v for k, v in self.ranges.items() if k not in ranges})
        return ResourceBag(scalars, ranges)

    def summary(self) -> dict[str, float]:
        return {k: v / SCALE for k, v in self.scalars.items()}

    def __repr__(self) -> str:
        return f"Resources({self.describe() or 'empty'})"
