"""Validation of an instance catalog given as plain data (what YAML or JSON gives).

Pure: no file I/O.  `catalog_from_mapping` checks the document field by field
and returns a `Catalog`, or raises `CatalogError` naming the offending field
path (`instance_types[3].spot_usd_per_hour`).
"""

from __future__ import annotations

import datetime as _dt
import math
import re
from collections.abc import Mapping
from typing import Any

from plastic.core.describe import show, type_name
from plastic.core.errors import CatalogError
from plastic.core.model import Catalog, InstanceType

#: The AWS Spot Instance Advisor's interruption-frequency bands, best first.
INTERRUPTION_BANDS: tuple[str, ...] = ("<5%", "5-10%", "10-15%", "15-20%", ">20%")

_TOP_KEYS = ("source", "retrieved", "region", "instance_types")
_REQUIRED = ("name", "vcpus", "ram_mib", "on_demand_usd_per_hour")
_OPTIONAL = ("spot_usd_per_hour", "spot_interruption_band")
_ENTRY_KEYS = _REQUIRED + _OPTIONAL
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def _key(key: object) -> str:
    """A mapping key as a field path element: plain names as they are, anything odd quoted."""
    if isinstance(key, str) and key and key.isprintable() and not any(c.isspace() for c in key):
        return key
    return show(key)


def _positive_int(value: Any, *, source: str, field: str) -> int:
    """An integer >= 1; a float is accepted only when it is integral (2.0), a bool never."""
    ok = False
    if isinstance(value, int) and not isinstance(value, bool):
        ok = value >= 1
    elif isinstance(value, float) and math.isfinite(value) and value.is_integer():
        ok = value >= 1
        value = int(value)
    if not ok:
        raise CatalogError(f"must be an integer >= 1, got {show(value)}", source=source, field=field)
    return int(value)


def _price(value: Any, *, source: str, field: str) -> float:
    """A finite number > 0 (US dollars per hour); bools and strings are refused."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise CatalogError(
            f"must be a number of US dollars per hour, got {type_name(value)} {show(value)}",
            source=source, field=field,
        )
    try:
        price = float(value)
    except OverflowError:
        price = math.inf
    if not math.isfinite(price) or price <= 0:
        raise CatalogError(f"must be a finite price > 0, got {show(value)}", source=source, field=field)
    return price


def _text(value: Any, *, source: str, field: str) -> str:
    if not isinstance(value, str):
        raise CatalogError(f"must be a string, got {type_name(value)} {show(value)}", source=source, field=field)
    return value.strip()


def _date(value: Any, *, source: str, field: str) -> str:
    """YYYY-MM-DD; YAML turns an unquoted date into a `datetime.date`, which is accepted too."""
    if isinstance(value, _dt.datetime):
        return value.date().isoformat()
    if isinstance(value, _dt.date):
        return value.isoformat()
    text = _text(value, source=source, field=field)
    if _DATE.fullmatch(text):
        try:
            _dt.date.fromisoformat(text)
            return text
        except ValueError:
            pass
    raise CatalogError(f"must be a date YYYY-MM-DD, got {show(value)}", source=source, field=field)


def _instance_type(entry: Any, *, source: str, field: str) -> InstanceType:
    if not isinstance(entry, Mapping):
        raise CatalogError(
            f"must be a mapping with {', '.join(_REQUIRED)}, got {type_name(entry)}",
            source=source, field=field,
        )
    for key in entry:
        if key not in _ENTRY_KEYS:
            raise CatalogError(
                f"unknown field (expected one of {', '.join(_ENTRY_KEYS)})",
                source=source, field=f"{field}.{_key(key)}",
            )
    for key in _REQUIRED:
        if key not in entry:
            raise CatalogError("missing required field", source=source, field=f"{field}.{key}")

    name = _text(entry["name"], source=source, field=f"{field}.name")
    if not name:
        raise CatalogError("must be a non-empty instance type name", source=source, field=f"{field}.name")
    vcpus = _positive_int(entry["vcpus"], source=source, field=f"{field}.vcpus")
    ram_mib = _positive_int(entry["ram_mib"], source=source, field=f"{field}.ram_mib")
    on_demand = _price(entry["on_demand_usd_per_hour"], source=source, field=f"{field}.on_demand_usd_per_hour")

    spot: float | None = None
    if entry.get("spot_usd_per_hour") is not None:
        # A spot price above on-demand happens in real markets; it is kept, not refused.
        spot = _price(entry["spot_usd_per_hour"], source=source, field=f"{field}.spot_usd_per_hour")

    band: str | None = None
    raw_band = entry.get("spot_interruption_band")
    if raw_band is not None:
        bfield = f"{field}.spot_interruption_band"
        if not isinstance(raw_band, str) or raw_band.strip() not in INTERRUPTION_BANDS:
            raise CatalogError(
                f"must be one of {', '.join(repr(b) for b in INTERRUPTION_BANDS)}, got {show(raw_band)}",
                source=source, field=bfield,
            )
        if spot is None:
            raise CatalogError(
                "an interruption band needs a spot_usd_per_hour (no spot market otherwise)",
                source=source, field=bfield,
            )
        band = raw_band.strip()

    return InstanceType(
        name=name,
        vcpus=vcpus,
        ram_mib=ram_mib,
        on_demand_usd_per_hour=on_demand,
        spot_usd_per_hour=spot,
        spot_interruption_band=band,
    )


def catalog_from_mapping(data: object, *, source: str) -> Catalog:
    """Validate a parsed catalog document and build the `Catalog`.

    `source` names where the data came from (a file path) and is carried by
    every error.  Instance types keep the document's order.
    """
    if not isinstance(data, Mapping):
        raise CatalogError(
            f"a catalog must be a mapping with an instance_types list, got {type_name(data)}",
            source=source,
        )
    for key in data:
        if key not in _TOP_KEYS:
            raise CatalogError(
                f"unknown top-level key (expected one of {', '.join(_TOP_KEYS)})",
                source=source, field=_key(key),
            )
    meta: dict[str, str] = {}
    for key in ("source", "region"):
        if data.get(key) is not None:
            meta[key] = _text(data[key], source=source, field=key)
    if data.get("retrieved") is not None:
        meta["retrieved"] = _date(data["retrieved"], source=source, field="retrieved")

    if "instance_types" not in data:
        raise CatalogError("missing required list of instance types", source=source, field="instance_types")
    entries = data["instance_types"]
    if not isinstance(entries, list | tuple):
        raise CatalogError(
            f"must be a list of instance types, got {type_name(entries)}", source=source, field="instance_types"
        )
    if not entries:
        raise CatalogError("must list at least one instance type", source=source, field="instance_types")

    types: list[InstanceType] = []
    first_index: dict[str, int] = {}
    for i, entry in enumerate(entries):
        field = f"instance_types[{i}]"
        itype = _instance_type(entry, source=source, field=field)
        if itype.name in first_index:
            raise CatalogError(
                f"duplicate instance type {itype.name!r} (first at instance_types[{first_index[itype.name]}])",
                source=source, field=f"{field}.name",
            )
        first_index[itype.name] = i
        types.append(itype)
    return Catalog(instance_types=tuple(types), **meta)
