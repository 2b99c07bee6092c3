"""`plastic inspect`: table and JSON output, options (in-process through click's runner)."""

from __future__ import annotations

import json

from click.testing import CliRunner

from plastic.cli import cli
from tests.cwl.helpers import data, example


def invoke(*args: str):
    result = CliRunner().invoke(cli, ["inspect", *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_json_rows_for_scripts():
    doc = json.loads(invoke("--format", "json", *example("scatter-gather")))
    assert [r["step_id"] for r in doc["rows"]] == ["split", "sort", "merge"]
    assert doc["rows"][1]["scatter_width"] == 12 and doc["rows"][1]["preempt"] is True
    assert doc["rows"][2]["parents"] == ["sort"] and doc["rows"][2]["preempt"] is False
    assert doc["assumptions"] == []


def test_table_shows_sources_widths_and_assumptions():
    wf, _ = example("scatter-gather")
    out = invoke(wf)
    for text in ("split", "sort", "merge", "inferred", "hint", "dynamic (assumed 1)", "Assumptions:",
                 "known only at run time"):
        assert text in out


def test_options_reach_the_loader():
    wf, _ = example("scatter-gather")
    doc = json.loads(invoke("--format", "json", "--no-infer-preempt", "--scatter-width", "5", wf))
    split = doc["rows"][0]
    assert (split["preempt"], split["preempt_source"]) == (False, "default")
    assert (split["scatter_width"], split["width_dynamic"]) == (5, True)
    assert any("assumed 5" in a for a in doc["assumptions"])


def test_table_for_a_bare_tool_with_job_order():
    out = invoke(data("sized-reads.cwl"), data("sized-reads-job.yml"))
    assert "sized-reads" in out and "ResourceRequirement" in out and "13" in out
