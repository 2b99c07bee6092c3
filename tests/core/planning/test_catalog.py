"""catalog_from_mapping: the catalog format, field by field."""

from __future__ import annotations

import copy
import datetime as dt
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plastic.core.errors import CatalogError, InputError
from plastic.core.model import Catalog, InstanceType
from plastic.core.planning.catalog import INTERRUPTION_BANDS, catalog_from_mapping

SRC = "test-catalog.yaml"


def entry(**overrides: object) -> dict:
    base = {
        "name": "c5.large",
        "vcpus": 2,
        "ram_mib": 4096,
        "on_demand_usd_per_hour": 0.085,
        "spot_usd_per_hour": 0.0349,
        "spot_interruption_band": "<5%",
    }
    base.update(overrides)
    return {k: v for k, v in base.items() if v is not _DROP}


_DROP = object()


def good() -> dict:
    return {
        "source": "a test",
        "retrieved": "2025-06-28",
        "region": "us-east-1",
        "instance_types": [
            entry(),
            entry(name="r5.large", ram_mib=16384, on_demand_usd_per_hour=0.126,
                  spot_usd_per_hour=_DROP, spot_interruption_band=_DROP),
        ],
    }


class TestValid:
    def test_full_document(self) -> None:
        cat = catalog_from_mapping(good(), source=SRC)
        assert isinstance(cat, Catalog)
        assert (cat.source, cat.retrieved, cat.region) == ("a test", "2025-06-28", "us-east-1")
        assert cat.instance_types[0] == InstanceType("c5.large", 2, 4096, 0.085, 0.0349, "<5%")
        # spot is optional: no spot market for that type
        assert cat.instance_types[1] == InstanceType("r5.large", 2, 16384, 0.126, None, None)

    def test_metadata_is_optional_and_order_is_kept(self) -> None:
        names = [f"t{i}" for i in range(5, 0, -1)]
        cat = catalog_from_mapping({"instance_types": [entry(name=n) for n in names]}, source=SRC)
        assert [t.name for t in cat.instance_types] == names
        assert (cat.source, cat.retrieved, cat.region) == ("", "", "")

    def test_spot_price_at_or_above_on_demand_is_allowed(self) -> None:
        cat = catalog_from_mapping({"instance_types": [entry(spot_usd_per_hour=0.2)]}, source=SRC)
        assert cat.instance_types[0].spot_usd_per_hour == 0.2

    def test_null_spot_fields_mean_absent(self) -> None:
        cat = catalog_from_mapping(
            {"instance_types": [entry(spot_usd_per_hour=None, spot_interruption_band=None)]}, source=SRC
        )
        assert cat.instance_types[0].spot_usd_per_hour is None

    def test_yaml_date_object_and_integral_floats(self) -> None:
        # YAML turns an unquoted 2025-06-28 into a date; JSON may write 2.0 for 2.
        doc = {"retrieved": dt.date(2025, 6, 28), "instance_types": [entry(vcpus=2.0, ram_mib=4096.0)]}
        cat = catalog_from_mapping(doc, source=SRC)
        assert cat.retrieved == "2025-06-28"
        assert cat.instance_types[0].vcpus == 2 and type(cat.instance_types[0].vcpus) is int

    def test_integer_price_and_every_band(self) -> None:
        types = [entry(name=f"x{i}", on_demand_usd_per_hour=1, spot_interruption_band=b)
                 for i, b in enumerate(INTERRUPTION_BANDS)]
        cat = catalog_from_mapping({"instance_types": types}, source=SRC)
        assert [t.spot_interruption_band for t in cat.instance_types] == list(INTERRUPTION_BANDS)
        assert cat.instance_types[0].on_demand_usd_per_hour == 1.0

    def test_input_is_not_modified(self) -> None:
        doc = good()
        before = copy.deepcopy(doc)
        catalog_from_mapping(doc, source=SRC)
        assert doc == before


def _with(path: str, value: object) -> dict:
    """good() with one change: `path` like 'instance_types[0].vcpus'; value _DROP deletes."""
    doc = good()
    target: object = doc
    parts = path.replace("]", "").replace("[", ".").split(".")
    for part in parts[:-1]:
        target = target[int(part)] if part.isdigit() else target[part]  # type: ignore[index]
    last = parts[-1]
    key: object = int(last) if last.isdigit() else last
    if value is _DROP:
        del target[key]  # type: ignore[attr-defined]
    else:
        target[key] = value  # type: ignore[index]
    return doc


BAD = [
    # (id, document, expected field path, words expected in the message)
    ("unknown-top-key", {**good(), "instnace_types": []}, "instnace_types", "unknown top-level key"),
    ("types-missing", {"source": "x"}, "instance_types", "missing"),
    ("types-not-list", {"instance_types": {"c5.large": {}}}, "instance_types", "list"),
    ("types-empty", {"instance_types": []}, "instance_types", "at least one"),
    ("entry-not-mapping", _with("instance_types[1]", "m5.large"), "instance_types[1]", "mapping"),
    ("unknown-entry-field", _with("instance_types[0].cpus", 2), "instance_types[0].cpus", "unknown field"),
    ("missing-name", _with("instance_types[0].name", _DROP), "instance_types[0].name", "missing"),
    ("missing-vcpus", _with("instance_types[1].vcpus", _DROP), "instance_types[1].vcpus", "missing"),
    ("missing-ram", _with("instance_types[0].ram_mib", _DROP), "instance_types[0].ram_mib", "missing"),
    ("missing-price", _with("instance_types[1].on_demand_usd_per_hour", _DROP),
     "instance_types[1].on_demand_usd_per_hour", "missing"),
    ("empty-name", _with("instance_types[0].name", "  "), "instance_types[0].name", "non-empty"),
    ("name-not-string", _with("instance_types[0].name", 5), "instance_types[0].name", "string"),
    ("vcpus-bool", _with("instance_types[0].vcpus", True), "instance_types[0].vcpus", "integer"),
    ("vcpus-zero", _with("instance_types[0].vcpus", 0), "instance_types[0].vcpus", "integer >= 1"),
    ("vcpus-fraction", _with("instance_types[0].vcpus", 2.5), "instance_types[0].vcpus", "integer"),
    ("ram-string", _with("instance_types[1].ram_mib", "16384"), "instance_types[1].ram_mib", "integer"),
    ("ram-negative", _with("instance_types[1].ram_mib", -1), "instance_types[1].ram_mib", "integer >= 1"),
    ("price-string", _with("instance_types[0].on_demand_usd_per_hour", "0.085"),
     "instance_types[0].on_demand_usd_per_hour", "number"),
    ("price-bool", _with("instance_types[0].on_demand_usd_per_hour", True),
     "instance_types[0].on_demand_usd_per_hour", "number"),
    ("price-zero", _with("instance_types[0].on_demand_usd_per_hour", 0),
     "instance_types[0].on_demand_usd_per_hour", "> 0"),
    ("price-negative", _with("instance_types[1].on_demand_usd_per_hour", -0.1),
     "instance_types[1].on_demand_usd_per_hour", "> 0"),
    ("price-nan", _with("instance_types[0].on_demand_usd_per_hour", math.nan),
     "instance_types[0].on_demand_usd_per_hour", "finite"),
    ("price-inf", _with("instance_types[0].on_demand_usd_per_hour", math.inf),
     "instance_types[0].on_demand_usd_per_hour", "finite"),
    ("price-huge-int", _with("instance_types[0].on_demand_usd_per_hour", 10**400),
     "instance_types[0].on_demand_usd_per_hour", "finite"),
    ("spot-zero", _with("instance_types[0].spot_usd_per_hour", 0.0), "instance_types[0].spot_usd_per_hour", "> 0"),
    ("spot-string", _with("instance_types[0].spot_usd_per_hour", "cheap"),
     "instance_types[0].spot_usd_per_hour", "number"),
    ("duplicate-name", _with("instance_types[1].name", "c5.large"), "instance_types[1].name", "duplicate"),
    ("unknown-band", _with("instance_types[0].spot_interruption_band", "<3%"),
     "instance_types[0].spot_interruption_band", "one of"),
    ("band-as-advisor-index", _with("instance_types[0].spot_interruption_band", 0),
     "instance_types[0].spot_interruption_band", "one of"),
    ("band-without-spot-price", _with("instance_types[1].spot_interruption_band", "<5%"),
     "instance_types[1].spot_interruption_band", "spot_usd_per_hour"),
    ("retrieved-not-a-date", _with("retrieved", "June 2025"), "retrieved", "YYYY-MM-DD"),
    ("retrieved-impossible-date", _with("retrieved", "2025-13-01"), "retrieved", "YYYY-MM-DD"),
    ("region-not-string", _with("region", ["us-east-1"]), "region", "string"),
    ("source-not-string", _with("source", 3), "source", "string"),
]


@pytest.mark.parametrize(("doc", "field", "words"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_catalog(doc: dict, field: str, words: str) -> None:
    with pytest.raises(CatalogError) as info:
        catalog_from_mapping(doc, source=SRC)
    err = info.value
    assert isinstance(err, InputError) and err.exit_code == 2
    assert err.field == field
    assert err.source == SRC
    text = str(err)
    assert text.startswith(f"{SRC}: {field}: ")
    assert words in text
    assert "\n" not in text


@pytest.mark.parametrize("doc", [None, [], "instance_types: []", 3, [good()]])
def test_not_a_mapping(doc: object) -> None:
    with pytest.raises(CatalogError) as info:
        catalog_from_mapping(doc, source=SRC)
    assert info.value.source == SRC
    assert "must be a mapping" in str(info.value)


def test_at_least_twelve_distinct_error_paths() -> None:
    assert len({b[2] for b in BAD}) >= 12


# --- fuzz --------------------------------------------------------------------

_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-10, max_value=10**20), st.floats(allow_nan=True),
    st.text(max_size=8), st.sampled_from(list(INTERRUPTION_BANDS)), st.dates(),
)
_values = st.recursive(_scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
    st.text(max_size=5), inner, max_size=3), max_leaves=6)
_entry_keys = st.sampled_from(["name", "vcpus", "ram_mib", "on_demand_usd_per_hour", "spot_usd_per_hour",
                               "spot_interruption_band", "extra"])
_plausible = {
    "name": st.sampled_from(["a", "b", "c", ""]) | _values,
    "vcpus": st.integers(min_value=-1, max_value=64) | _values,
    "ram_mib": st.integers(min_value=-1, max_value=10**6) | _values,
    "on_demand_usd_per_hour": st.floats(min_value=-1, max_value=10) | _values,
    "spot_usd_per_hour": st.floats(min_value=-1, max_value=10) | _values,
    "spot_interruption_band": st.sampled_from(list(INTERRUPTION_BANDS)) | _values,
    "extra": _values,
}
_entries = st.lists(_entry_keys, unique=True).flatmap(
    lambda keys: st.fixed_dictionaries({k: _plausible[k] for k in keys})
)
_documents = st.one_of(
    _values,
    st.fixed_dictionaries(
        {"instance_types": st.lists(_entries | _values, max_size=4)},
        optional={"source": _values, "retrieved": _values | st.just("2025-06-28"), "region": _values,
                  "other": _values},
    ),
)


@settings(max_examples=400, deadline=None)
@given(_documents)
def test_fuzz_catalog_is_valid_or_catalog_error(doc: object) -> None:
    try:
        cat = catalog_from_mapping(doc, source=SRC)
    except CatalogError as err:
        assert err.source == SRC
        assert "\n" not in str(err)
        return
    assert isinstance(cat, Catalog) and cat.instance_types
    names = [t.name for t in cat.instance_types]
    assert len(set(names)) == len(names) and all(names)
    for t in cat.instance_types:
        assert type(t.vcpus) is int and t.vcpus >= 1
        assert type(t.ram_mib) is int and t.ram_mib >= 1
        assert math.isfinite(t.on_demand_usd_per_hour) and t.on_demand_usd_per_hour > 0
        if t.spot_usd_per_hour is not None:
            assert math.isfinite(t.spot_usd_per_hour) and t.spot_usd_per_hour > 0
        assert t.spot_interruption_band in (None, *INTERRUPTION_BANDS)
        if t.spot_interruption_band is not None:
            assert t.spot_usd_per_hour is not None
