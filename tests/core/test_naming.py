"""Cluster names keep to one rule (plastic.core.naming), whatever the catalog calls its types; a run's S3 job
store name is one Toil and S3 take, whatever the run id."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from plastic.core.naming import (
    CLUSTER_NAME_MAX,
    cluster_name,
    is_cluster_name,
    is_job_store_name,
    job_store_name,
    job_store_slug,
)


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


@given(st.text(max_size=80), st.from_regex(r"[0-9]{12}", fullmatch=True), st.sampled_from(["us-east-1", "eu-west-2"]))
def test_a_runs_job_store_name_is_one_toil_takes_whatever_the_run_id(run_id, account, region):
    name = job_store_name(run_id, account, region)
    assert is_job_store_name(name) and name.startswith("plastic-" + job_store_slug(run_id))
    assert len(name + "--toil") <= 63  # an S3 bucket name
    assert job_store_name(run_id, account, region) == name


def test_job_store_names_differ_by_account_region_and_run():
    names = {job_store_name(r, a, g) for r in ("lab1", "LAB1") for a in ("111111111111", "222222222222")
             for g in ("us-east-1", "eu-west-2")}
    assert len(names) == 8  # the digest is of the run id as given: LAB1 and lab1 are two runs
    assert job_store_name("x" * 40, "1", "r") == job_store_name("x" * 40, "1", "r")
    assert not is_job_store_name("plastic-a--b") and not is_job_store_name("-abc") and not is_job_store_name("ab")
