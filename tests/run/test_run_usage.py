"""What each step asked for against what its tasks used, through `plastic run` and `plastic report`: a step of
known usage (a busy loop of 1.5 CPU seconds, 400 MiB touched) whose annotation asks for 2 vcpus and 3 GiB; and
the run's cost floor, in its report.json and in `plastic report`'s table."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.run.helpers import TIMEOUT_S, plastic_run

pytest.importorskip("toil")
pytestmark = pytest.mark.toil_e2e

LOOP_CPU_S = 1.5
TOUCHED_MIB = 400


def test_the_report_shows_what_a_step_asked_for_and_used(tmp_path):
    from tests.clirun import REPO

    res = plastic_run(tmp_path, "usage", examples=REPO / "tests" / "run" / "data")
    assert res.returncode == 0, res.stderr[-3000:]
    assert "burn: asks for more than it uses" in res.stderr + res.stdout
    (step,) = json.loads((tmp_path / "report.json").read_text())["steps"]
    assert (step["step"], step["tasks_measured"], step["vcpus_asked"], step["ram_mib_asked"]) == ("burn", 1, 2, 3072)
    # the loop's CPU time, plus Toil's worker and the tool's interpreter starting (well under 5 s here)
    assert LOOP_CPU_S <= step["cpu_s_total"] < LOOP_CPU_S + 5.0, step
    assert step["cores_used_max"] <= 1.05, step  # one busy core at most
    assert TOUCHED_MIB <= step["rss_mib_max"] < TOUCHED_MIB + 300, step  # the touched MiB, and the interpreter
    assert (step["vcpus_fit"], step["ram_mib_fit"]) == (1, 768 if step["rss_mib_max"] * 1.25 > 512 else 512)
    assert step["finding"].startswith("asks for more than it uses: vcpus 2")
    assert step["usd_saved"] > 0
    report = subprocess.run([sys.executable, "-m", "plastic", "report", str(tmp_path / "run"), "--format", "json"],
                            capture_output=True, text=True, timeout=TIMEOUT_S, check=True)
    assert json.loads(report.stdout)["steps"] == [step]  # the decisions log says the same as the run's Redis
    saved = json.loads((tmp_path / "report.json").read_text())
    floor = saved["floor"]  # one task of 2 vcpus, its wall time the critical path's stand-in, by the makespan
    assert (floor["tasks"], floor["boot_s"], floor["critical_path_from"]) == (1, 0.0, "longest task"), floor
    assert 0 < floor["critical_path_s"] <= floor["cap_s"] == pytest.approx(saved["makespan_s"])
    assert floor["vcpu_s"] == pytest.approx(2 * floor["critical_path_s"])
    assert 0 < floor["usd"] <= saved["cost_usd"] and floor["cost_over_floor"] >= 1.0, (floor, saved["cost_usd"])
    assert json.loads(report.stdout)["floor"] == floor  # the same again from the decisions log
    table = subprocess.run([sys.executable, "-m", "plastic", "report", str(tmp_path / "run")],
                           capture_output=True, text=True, timeout=TIMEOUT_S, check=True)
    text = " ".join(table.stdout.split())
    assert (f"cost {saved['cost_usd']:.6f} USD, {floor['cost_over_floor']:.2f} x the floor ({floor['usd']:.6f} USD: "
            "no policy that keeps an on-demand node pays less for this task by this makespan; boot 0 s") in text
    html = tmp_path / "run.html"
    subprocess.run([sys.executable, "-m", "plastic", "report", str(tmp_path / "run"), "--html", str(html)],
                   capture_output=True, text=True, timeout=TIMEOUT_S, check=True)
    page = html.read_text()
    assert "Asked for against used, per step" in page and "asks for more than it uses" in page
