"""A lowered workflow loads without the network.

schema-salad checks every class link it does not know with an HTTP HEAD
request, never caches a failure, and cwltool re-resolves the whole packed
document for each step it loads, so the `arv:UsePreemptible` of every tool copy
cost steps x tools requests (each a DNS wait without a network).  The lowered
document declares those classes in its `$namespaces`; these tests run the real
loaders behind a local proxy that records every request.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from plastic.core.planning.annotations import ARVADOS_USE_PREEMPTIBLE
from plastic.cwl.lower import lower_workflow
from tests.cwl.helpers import CWLTOOL, data
from tests.cwl.netrecord import ProxyRecorder, proxy_env, proxy_recorder

LOWER = Path(__file__).resolve().parent / "data" / "lower"
MARKER = "http://example.org/plastic-test#Marker"

# a foreign hint class of the user's own, at the workflow, a step and a tool
FOREIGN = """cwlVersion: v1.2
class: Workflow
$namespaces:
  plastic: "https://w3id.org/plastic/cwl#"
  ex: "http://example.org/plastic-test#"
hints:
  ex:Marker: {}
inputs: []
outputs: []
steps:
  one:
    run: &tool
      class: CommandLineTool
      baseCommand: "true"
      inputs: []
      outputs: []
      hints:
        ex:Marker: {level: tool}
    in: []
    out: []
    hints:
      ex:Marker: {level: step}
      plastic:Plasticity: {preempt: true}
  two:
    run: *tool
    in: []
    out: []
"""


@pytest.fixture
def recorder() -> Iterator[ProxyRecorder]:
    with proxy_recorder() as rec:
        yield rec


def cwltool_validate(path: str, recorder: ProxyRecorder) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(CWLTOOL), "--quiet", "--validate", path], capture_output=True, text=True,
                          env=proxy_env(recorder.url), cwd=Path(path).parent, timeout=300, check=False)


def test_the_recorder_sees_schema_salads_link_checks(tmp_path, recorder):
    """The probe works: an undeclared foreign class in a plain document is checked through the proxy."""
    (tmp_path / "tool.cwl").write_text(
        "cwlVersion: v1.2\nclass: CommandLineTool\n$namespaces: {arv: 'http://arvados.org/cwl#'}\n"
        "baseCommand: 'true'\ninputs: []\noutputs: []\nhints:\n  arv:UsePreemptible: {usePreemptible: true}\n")
    res = cwltool_validate(str(tmp_path / "tool.cwl"), recorder)
    assert res.returncode == 0, res.stderr[-2000:]
    assert any("arvados.org/cwl" in line for line in recorder.requests), recorder.requests


@pytest.mark.parametrize("source", [str(LOWER / "twice.cwl"), data("resolution.cwl"), data("v10-workflow.cwl"),
                                    data("v11-workflow.cwl")],
                         ids=["twice", "resolution", "v10", "v11"])
@pytest.mark.slow
def test_cwltool_loads_a_lowered_workflow_without_a_request(tmp_path, recorder, source):
    r = lower_workflow(source, str(tmp_path / "out"))
    recorder.clear()  # only what cwltool does with the lowered document counts
    res = cwltool_validate(r.workflow_path, recorder)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "is valid CWL" in res.stdout
    assert recorder.requests == []


def test_user_hint_classes_are_declared_too(tmp_path, recorder, monkeypatch):
    (tmp_path / "foreign.cwl").write_text(FOREIGN)
    for name, value in proxy_env(recorder.url, {}).items():  # the lowering's own check of the original
        monkeypatch.setenv(name, value)
    r = lower_workflow(str(tmp_path / "foreign.cwl"), str(tmp_path / "out"))
    doc = json.loads(Path(r.workflow_path).read_text())
    assert doc["$namespaces"] == {"plastic": "https://w3id.org/plastic/cwl#", "ex": "http://example.org/plastic-test#",
                                  "arv": "http://arvados.org/cwl#", ARVADOS_USE_PREEMPTIBLE: ARVADOS_USE_PREEMPTIBLE,
                                  MARKER: MARKER}
    recorder.clear()
    res = cwltool_validate(r.workflow_path, recorder)
    assert res.returncode == 0, res.stderr[-2000:]
    assert recorder.requests == []


def test_toil_still_finds_the_hint_by_its_full_name(tmp_path, recorder, monkeypatch):
    """What Toil's CWLJob asks cwltool for: the tool's own UsePreemptible, under its full IRI
    (loaded in this process, with schema-salad's own fetcher, still without a request)."""
    from cwltool.load_tool import load_tool
    from cwltool.process import shortname
    from schema_salad.ref_resolver import file_uri

    from plastic.cwl.glue import new_loading_context

    r = lower_workflow(data("resolution.cwl"), str(tmp_path / "out"))
    for name, value in proxy_env(recorder.url, {}).items():
        monkeypatch.setenv(name, value)
    recorder.clear()
    main = load_tool(file_uri(r.workflow_path), new_loading_context())
    assert recorder.requests == []
    seen = {}
    for step in main.steps:
        req, _ = step.embedded_tool.get_requirement(ARVADOS_USE_PREEMPTIBLE)
        seen[shortname(step.id)] = req["usePreemptible"] if req else None
    want = {s.step: s.preempt.preemptible for s in r.steps}
    assert seen == want and set(want.values()) == {True, False}

