"""plastic.core.planning.annotations: parse_plasticity is total (valid hint or AnnotationError), by fuzzing."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plastic.core.errors import AnnotationError
from plastic.core.model import PREEMPTIBLE, RELIABLE, Preempt
from plastic.core.planning.annotations import (
    ARVADOS_USE_PREEMPTIBLE,
    PLASTIC_NAMESPACE,
    PLASTICITY_CLASS,
    PlasticityHint,
    parse_plasticity,
    parse_preempt,
    parse_use_preemptible,
    positive_int,
)

FIELDS = ["vcpus", "vram", "preempt", "instanceType"]
KEYS = st.one_of(
    st.sampled_from(FIELDS + ["class", "foo", "vcpu", "id"]),
    st.sampled_from(FIELDS).map(lambda f: "plastic:" + f),
    st.sampled_from(FIELDS).map(lambda f: PLASTIC_NAMESPACE + f),
    st.text(max_size=12),
    st.integers(),
)
SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=20),
    st.sampled_from(["", "  ", " m5.large ", "true", "1", "0"]),
)
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(st.text(max_size=5), inner, max_size=3), max_leaves=6)


def _check_valid(hint: PlasticityHint) -> None:
    for value in (hint.vcpus, hint.ram_mib):
        assert value is None or (type(value) is int and value >= 1)
    if hint.preempt is not None:
        assert isinstance(hint.preempt, Preempt)
        m = hint.preempt.max_preemptions
        assert m is None or (type(m) is int and m >= 0)
    if hint.instance_type is not None:
        assert isinstance(hint.instance_type, str)
        assert hint.instance_type and hint.instance_type == hint.instance_type.strip()


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(KEYS, VALUES, max_size=6))
@pytest.mark.slow
def test_random_mappings_give_a_valid_hint_or_an_annotation_error(mapping):
    try:
        hint = parse_plasticity(mapping, source="fuzz.cwl")
    except AnnotationError as exc:
        assert exc.source == "fuzz.cwl"
        assert exc.field is not None and exc.field.startswith("plastic:Plasticity")
        return
    _check_valid(hint)


@settings(max_examples=100, deadline=None)
@given(st.one_of(VALUES, st.lists(st.tuples(KEYS, VALUES))))
@pytest.mark.slow
def test_non_mappings_are_refused(value):
    if isinstance(value, dict):
        return
    with pytest.raises(AnnotationError):
        parse_plasticity(value)


@settings(max_examples=200, deadline=None)
@given(
    vcpus=st.none() | st.integers(min_value=1, max_value=10**6),
    vram=st.none() | st.integers(min_value=1, max_value=10**9),
    preempt=st.none() | st.booleans() | st.integers(min_value=0, max_value=1000),
    itype=st.none() | st.from_regex(r"[a-z][a-z0-9]{0,6}\.[a-z0-9]{1,8}", fullmatch=True),
    prefix=st.sampled_from(["", "plastic:", PLASTIC_NAMESPACE]),
)
def test_valid_values_round_trip(vcpus, vram, preempt, itype, prefix):
    raw = {"class": PLASTICITY_CLASS}
    for key, value in (("vcpus", vcpus), ("vram", vram), ("preempt", preempt), ("instanceType", itype)):
        if value is not None:
            raw[prefix + key] = value
    hint = parse_plasticity(raw)
    assert (hint.vcpus, hint.ram_mib, hint.instance_type) == (vcpus, vram, itype)
    expected = None if preempt is None else Preempt.from_json(preempt)
    assert hint.preempt == expected


@pytest.mark.parametrize("value, expected", [(True, PREEMPTIBLE), (False, RELIABLE), (0, RELIABLE),
                                             (3, Preempt(3))])
def test_parse_preempt_values(value, expected):
    assert parse_preempt(value, source=None) == expected


@pytest.mark.parametrize("value", ["yes", -1, 1.5, None, [True]])
def test_parse_preempt_refuses(value):
    with pytest.raises(AnnotationError):
        parse_preempt(value, source="x.cwl")


@pytest.mark.parametrize("value", [0, -1, 1.5, "2", True, math.nan, math.inf, None])
def test_positive_int_refuses(value):
    with pytest.raises(AnnotationError):
        positive_int(value, source="x.cwl", field="f")


def test_positive_int_accepts_integral_floats():
    assert positive_int(4.0, source=None, field="f") == 4


@given(st.dictionaries(KEYS, VALUES, max_size=4))
def test_use_preemptible_is_total(mapping):
    try:
        result = parse_use_preemptible(mapping, source="x.cwl")
    except AnnotationError:
        return
    assert result in (PREEMPTIBLE, RELIABLE)


def test_use_preemptible_values():
    key = ARVADOS_USE_PREEMPTIBLE.rsplit("#", 1)[0] + "#usePreemptible"
    assert parse_use_preemptible({"usePreemptible": True}) == PREEMPTIBLE
    assert parse_use_preemptible({key: False}) == RELIABLE
