"""The driver's scenarios and the raw scheduler-API scenarios, run against the compose cluster's
real Apache Mesos 1.11 master (the same test bodies as against plastic's local master: where they
disagree, the local master is wrong).  Each scenario needs only `cluster.master_url`."""

from __future__ import annotations

import pytest

from plastic.mesos import DriverStatus  # noqa: F401  (the scenarios' module needs it loaded)
from tests.local.rawmesos import scheduler  # noqa: F401  (fixture)
from tests.local.scheduler_scenarios import (  # noqa: F401  (collected here, against the real master)
    test_decline_filter_and_revive,
    test_invalid_accepts,
    test_kill_sends_killing_then_killed_and_kills_the_group,
    test_reconcile_rules,
    test_suppress_keeps_outstanding_offers,
)
from tests.mesos.driver_scenarios import (  # noqa: F401  (collected here, against the real master)
    attributes,
    drivers,
    scalar,
    test_failover_to_a_new_driver_keeps_tasks,
    test_kill_goes_through_killing,
    test_launch_finish_and_fail_with_exit_codes,
    test_reconcile_explicit_and_implicit,
)
from tests.mesos.helpers import Recorder


def test_subscribe_and_offers_from_the_three_labelled_agents(cluster, drivers):  # noqa: F811
    sched = Recorder()
    driver = drivers(sched, cluster.master_url, name="compose-offers")
    sched.wait_count("registered")
    _framework_id, master_info = sched.of("registered")[0]
    assert master_info.get("version", "").startswith("1.11")
    sched.wait_for(lambda: len({o["agent_id"]["value"] for a in sched.of("resourceOffers") for o in a[0]}) == 3,
                   30, "offers from the three agents")
    offers = {o["agent_id"]["value"]: o for a in sched.of("resourceOffers") for o in a[0]}
    by_cluster = {attributes(o)["cluster"]: attributes(o) for o in offers.values()}
    assert {c: a["preemptible"] for c, a in by_cluster.items()} == {
        "core": "false", "burst-large": "true", "burst-small": "true"}
    assert {c: a["market"] for c, a in by_cluster.items()} == {
        "core": "on-demand", "burst-large": "spot", "burst-small": "spot"}
    core = next(o for o in offers.values() if attributes(o)["cluster"] == "core")
    assert scalar(core, "cpus") == pytest.approx(2.0)
    assert driver.status is DriverStatus.DRIVER_RUNNING
