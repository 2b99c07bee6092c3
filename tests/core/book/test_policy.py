"""The per-tool policy table: parsing with one-line errors, and the unitName lookup."""

from __future__ import annotations

import json

import pytest

from plastic.core.book.policy import (
    EMPTY,
    POLICY_VERSION,
    PolicyError,
    ResolvedPolicy,
    ToolPolicy,
    parse_policy,
    parse_policy_text,
    resolve,
    tool_key,
)
from plastic.core.errors import InputError
from plastic.core.model import PREEMPTIBLE, RELIABLE, Preempt

SRC = "/runs/r1/policy.json"


def table(**tools):
    return parse_policy({"version": POLICY_VERSION, "tools": tools}, source=SRC)


def test_parse_entries():
    t = table(plastic_sort={"preempt": 2, "instance_type": "m5.large", "step": "main/sort"},
              plastic_merge={"preempt": False}, plastic_split={"preempt": True, "instance_type": None},
              plastic_any={})
    assert t.tools == {
        "plastic_sort": ToolPolicy(Preempt(2), "m5.large", "main/sort"),
        "plastic_merge": ToolPolicy(RELIABLE),
        "plastic_split": ToolPolicy(PREEMPTIBLE),
        "plastic_any": ToolPolicy(),
    }
    assert t.source == SRC
    assert table(x={"preempt": 0}).tools["x"].preempt == RELIABLE


@pytest.mark.parametrize(("doc", "field", "words"), [
    ([], None, "JSON object"),
    ({"tools": {}}, "version", "plastic.policy/v1"),
    ({"version": "plastic.policy/v2", "tools": {}}, "version", "v2"),
    ({"version": POLICY_VERSION, "tools": [], }, "tools", "object"),
    ({"version": POLICY_VERSION, "tool": {}}, "tool", "unknown"),
    ({"version": POLICY_VERSION, "tools": {"a.b": {}}}, "tools.a.b", "dot-free"),
    ({"version": POLICY_VERSION, "tools": {"a": 3}}, "tools.a", "object"),
    ({"version": POLICY_VERSION, "tools": {"a": {"preempt": -1}}}, "tools.a.preempt", "integer >= 0"),
    ({"version": POLICY_VERSION, "tools": {"a": {"preempt": "yes"}}}, "tools.a.preempt", "'yes'"),
    ({"version": POLICY_VERSION, "tools": {"a": {"preempt": 1.5}}}, "tools.a.preempt", "1.5"),
    ({"version": POLICY_VERSION, "tools": {"a": {"instance_type": ""}}}, "tools.a.instance_type", "instance type"),
    ({"version": POLICY_VERSION, "tools": {"a": {"instanceType": "m5.large"}}}, "tools.a", "'instanceType'"),
    ({"version": POLICY_VERSION, "tools": {"a": {"step": 7}}}, "tools.a.step", "step name"),
])
def test_parse_errors_name_file_and_field(doc, field, words):
    with pytest.raises(PolicyError) as info:
        parse_policy(doc, source=SRC)
    err = info.value
    assert isinstance(err, InputError) and err.exit_code == 2
    assert err.source == SRC and err.field == field
    line = str(err)
    assert "\n" not in line and line.startswith(SRC) and words in line


def test_parse_text():
    t = parse_policy_text(json.dumps({"version": POLICY_VERSION, "tools": {"k": {"preempt": 1}}}), source=SRC)
    assert t.tools["k"].preempt == Preempt(1)
    with pytest.raises(PolicyError, match=r"^/runs/r1/policy.json: not valid JSON: .* line 1 column"):
        parse_policy_text("{nope", source=SRC)


def test_tool_key():
    assert tool_key("wf.cwl.sort.plastic_sort") == "plastic_sort"
    assert tool_key("wf.cwl.0.plastic_sort") == "plastic_sort"
    assert tool_key("plain") == "plain"
    assert tool_key("") == "" and tool_key(None) == ""


def test_resolve_table_wins_over_toil():
    t = table(plastic_sort={"preempt": 0, "instance_type": "m5.large", "step": "main/sort"},
              plastic_split={"preempt": 3}, plastic_keep={"instance_type": "c5.large"})
    assert resolve("wf.cwl.0.plastic_sort", True, t) == ResolvedPolicy(RELIABLE, "m5.large", "plastic_sort",
                                                                        "main/sort")
    assert resolve("wf.cwl.split.plastic_split", False, t) == ResolvedPolicy(Preempt(3), None, "plastic_split",
                                                                             None)
    # an entry without preempt keeps Toil's preemptible
    assert resolve("wf.cwl.k.plastic_keep", True, t).preempt == PREEMPTIBLE
    assert resolve("wf.cwl.k.plastic_keep", False, t).preempt == RELIABLE


def test_resolve_without_entry_uses_toil():
    t = table(plastic_sort={"preempt": 0})
    assert resolve("wf.cwl.0.echo-tool.cwl", True, t) == ResolvedPolicy(PREEMPTIBLE, None,
                                                                         "wf.cwl.0.echo-tool.cwl", None)
    assert resolve("wf.cwl.x.other", False, EMPTY) == ResolvedPolicy(RELIABLE, None, "wf.cwl.x.other", None)
    assert resolve("", True) == ResolvedPolicy(PREEMPTIBLE, None, None, None)
    assert resolve(None, False) == ResolvedPolicy(RELIABLE, None, None, None)
