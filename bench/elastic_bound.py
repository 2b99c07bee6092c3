"""The least any policy could pay for a trace under the elastic benchmark's rules: a lower bound.

The bound lives in plastic's core (plastic.core.account.floor, whose docstring gives its rules and its
argument), where `plastic report` sets every finished run's cost beside it; bench/elastic.py and its
tests read it from here under the names they always have.
"""

from __future__ import annotations

from plastic.core.account.floor import (
    MIN_BILLED_S,
    cheapest_vcpus_usd_per_hour,
    critical_path_s,
    runtime_s,
    usd_lower_bound,
)

__all__ = ["MIN_BILLED_S", "cheapest_vcpus_usd_per_hour", "critical_path_s", "runtime_s", "usd_lower_bound"]
