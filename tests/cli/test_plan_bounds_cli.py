"""`plastic plan`'s lower bound, in its table and its JSON: it says what it is the least cost of, it is never
above the plan, and the at-once bound of a budget plan whose tasks queue is shown as no bound of it (it used
to print "plan is 0.0% above it" under a plan that cost half of it)."""

from __future__ import annotations

import json

import pytest
import yaml

from tests.clirun import REPO, plastic

SCATTER = REPO / "cwl-examples" / "scatter-gather"
INPUTS = (SCATTER / "scatter-gather.cwl", SCATTER / "job.yml")


def bound_lines(*args: object) -> list[str]:
    res = plastic("plan", *INPUTS, *args, env={"COLUMNS": "160"})
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("lower bound"))
    return [lines[start], *(line.strip() for line in lines[start + 1:] if line.startswith(" " * 21))]


def plan_json(*args: object) -> dict:
    res = plastic("plan", *INPUTS, *args, "--format", "json")
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def test_an_unconstrained_plan_is_measured_against_running_each_wave_at_once():
    doc = plan_json()
    assert doc["mode"] == "waves"
    assert doc["lower_bound_usd_per_hour"] <= doc["cost_per_hour"]
    assert doc["cost_over_lower_bound"] == pytest.approx(doc["cost_per_hour"] / doc["lower_bound_usd_per_hour"],
                                                         abs=1e-3)
    first = doc["lower_bounds"][0]
    assert first == {"usd_per_hour": doc["lower_bound_usd_per_hour"], "to_run": "each wave at once",
                     "bounds_this_plan": True}
    assert all(b["bounds_this_plan"] for b in doc["lower_bounds"])
    percent = f"{100 * (doc['cost_over_lower_bound'] - 1):.1f}%"
    assert bound_lines() == [f"lower bound:         {doc['lower_bound_usd_per_hour']:.4f} $/h to run each wave "
                             f"at once (plan is {percent} above it)"]


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_a_budget_plan_says_the_at_once_bound_is_none_of_its_own(fmt, tmp_path):
    """0.2 $/h buys 0.1828 $/h: 12 of 25 tasks queue; running each wave at once costs at least 0.4029 $/h."""
    out = tmp_path / f"plan.{fmt}"
    res = plastic("plan", *INPUTS, "--budget-per-hour", "0.2", "--format", fmt, "-o", out)
    assert res.returncode == 0, res.stderr
    doc = yaml.safe_load(out.read_text())  # JSON is YAML
    assert doc["mode"] == "budget" and doc["cost_per_hour"] <= 0.2
    assert doc["lower_bound_usd_per_hour"] <= doc["cost_per_hour"] and doc["cost_over_lower_bound"] >= 1
    binding, at_once = doc["lower_bounds"]
    assert binding == {"usd_per_hour": doc["lower_bound_usd_per_hour"], "to_run": "every task, one after another",
                       "bounds_this_plan": True}
    assert at_once["to_run"] == "each wave at once" and at_once["bounds_this_plan"] is False
    assert at_once["usd_per_hour"] > doc["cost_per_hour"]
    assert "ratio_to_lower_bound" not in doc and "lower_bound_per_hour" not in doc


def test_the_budget_table_tells_which_bound_bounds_the_plan():
    doc = plan_json("--budget-per-hour", "0.2")
    binding, at_once = doc["lower_bounds"]
    percent = f"{100 * (doc['cost_over_lower_bound'] - 1):.1f}%"
    assert bound_lines("--budget-per-hour", "0.2") == [
        f"lower bound:         {binding['usd_per_hour']:.4f} $/h to run every task, one after another "
        f"(plan is {percent} above it)",
        f"{at_once['usd_per_hour']:.4f} $/h to run each wave at once: not a bound of this plan, whose tasks queue"]


def test_no_percentage_under_a_bound_is_negative():
    for args in ((), ("--concurrent",), ("--budget-per-hour", "0.2"), ("--budget-per-hour", "0.4135")):
        line = bound_lines(*args)[0]
        assert "(plan is -" not in line and "above it)" in line, (args, line)
