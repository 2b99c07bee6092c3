"""Cluster names keep to one rule (plastic.core.naming), whatever the catalog calls its types."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from plastic.core.naming import CLUSTER_NAME_MAX, cluster_name, is_cluster_name


@pytest.mark.parametrize("name", ["core", "burst", "burst-small", "burst-c5.4xlarge", "a", "A_b.c-9", "x" * 63])
def test_names_plastic_makes_and_users_write_are_names(name):
    assert is_cluster_name(name)


@pytest.mark.parametrize("name", ["", "-core", ".core", "burst small", "burst/large", "bürst", "x" * 64, None, 3])
def test_what_some_place_would_refuse_is_not_a_name(name):
    assert not is_cluster_name(name)


def test_an_instance_type_fits_as_it_is_and_anything_else_is_made_to_fit():
    assert cluster_name("burst", "c5.4xlarge") == "burst-c5.4xlarge"
    assert cluster_name("burst", "my type/2") == "burst-my-type-2"


def test_two_long_types_that_share_their_head_get_two_names():
    a, b = cluster_name("burst", "x" * 80 + "a"), cluster_name("burst", "x" * 80 + "b")
    assert a != b and len(a) == len(b) == CLUSTER_NAME_MAX and is_cluster_name(a) and is_cluster_name(b)


@given(st.sampled_from(["core", "burst"]), st.text(min_size=1, max_size=120))
def test_a_name_made_from_any_type_is_a_name(stem, itype):
    assert is_cluster_name(cluster_name(stem, itype))
