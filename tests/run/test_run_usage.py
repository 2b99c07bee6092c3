"""What each step asked for against what its tasks used, through `plastic run` and `plastic report`: a step of
known usage (a busy loop of 1.5 CPU seconds, 400 MiB touched) whose annotation asks for 2 vcpus and 3 GiB."""

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
    html = tmp_path / "run.html"
    subprocess.run([sys.executable, "-m", "plastic", "report", str(tmp_path / "run"), "--html", str(html)],
                   capture_output=True, text=True, timeout=TIMEOUT_S, check=True)
    page = html.read_text()
    assert "Asked for against used, per step" in page and "asks for more than it uses" in page
