"""Key templates (plastic/store/keys.py) and the Lua transition tables generated from lifecycle."""

from __future__ import annotations

import pytest

from plastic.core.book.lifecycle import TABLES, allowed
from plastic.store.keys import DEFAULT_PREFIX, Keys, check_run_id
from plastic.store.scripts import lua_tables


def all_keys(keys: Keys) -> list[str]:
    return [
        keys.runs(),
        keys.run_state("RUNNING"),
        keys.run("r1"),
        keys.framework_id("r1"),
        keys.events("r1"),
        keys.events(None),
        keys.run_tasks("r1"),
        keys.task_state("r1", "QUEUED"),
        keys.task("r1", "t1"),
        keys.task_attempts("r1", "t1"),
        keys.agents(),
        keys.agent_state("ACTIVE"),
        keys.agent("a1"),
        keys.runtime("bwa-mem"),
        keys.submissions(),
    ]


def test_default_prefix_and_templates():
    keys = Keys()
    assert keys.prefix == DEFAULT_PREFIX == "plastic:"
    assert all_keys(keys) == [
        "plastic:runs",
        "plastic:runs:state:RUNNING",
        "plastic:run:r1",
        "plastic:run:r1:framework",
        "plastic:run:r1:events",
        "plastic:events",
        "plastic:run:r1:tasks",
        "plastic:run:r1:state:QUEUED",
        "plastic:run:r1:task:t1",
        "plastic:run:r1:attempts:t1",
        "plastic:agents",
        "plastic:agents:state:ACTIVE",
        "plastic:agent:a1",
        "plastic:runtime:bwa-mem",
        "plastic:submissions",
    ]


def test_every_key_carries_the_configured_prefix_and_no_two_templates_meet():
    keys = Keys("test-1:")
    made = all_keys(keys)
    assert all(k.startswith("test-1:") for k in made)
    assert len(set(made)) == len(made)
    assert keys.run_state("X") == keys.run_state_prefix() + "X"
    assert keys.task_state("r1", "X") == keys.task_state_prefix("r1") + "X"
    assert keys.agent_state("X") == keys.agent_state_prefix() + "X"
    assert keys.task("r1", "t") == keys.task_prefix("r1") + "t"


def test_ids_with_colons_stay_in_their_own_key():
    keys = Keys()
    # task and agent ids are always the last component: a colon cannot reach another template
    assert keys.task("r1", "x:attempts") != keys.task_attempts("r1", "x")
    assert keys.task("r1", "a:b") == "plastic:run:r1:task:a:b"
    assert keys.agent("s:0") == "plastic:agent:s:0"


@pytest.mark.parametrize("bad", ["", "a:b", "a b", "-x", ".x", "x/y", "a" * 129, "r{1}"])
def test_run_ids_that_could_break_key_templates_are_refused(bad):
    with pytest.raises(ValueError):
        check_run_id(bad)
    with pytest.raises(ValueError):
        Keys().run(bad)


def test_good_run_ids():
    for good in ["r1", "r20260101-120000-abcdef", "A.b_c-d", "a" * 128]:
        assert check_run_id(good) == good


def test_generated_lua_table_agrees_with_the_python_table(client):
    """Evaluate the generated Lua literal on the server for every (kind, from, to) pair."""
    script = (
        lua_tables()
        + """
local out = {}
for i = 1, #ARGV, 3 do
  local row = TABLES[ARGV[i]][ARGV[i + 1]]
  out[#out + 1] = (row ~= nil and row[ARGV[i + 2]]) and 1 or 0
end
return out
"""
    )
    triples = [(kind, str(a), str(b)) for kind, table in TABLES.items() for a in table for b in table]
    flat = [x for t in triples for x in t]
    answers = client.eval(script, 0, *flat)
    expected = [1 if allowed(k, a, b) else 0 for k, a, b in triples]
    assert answers == expected
    assert sum(answers) == sum(len(v) for table in TABLES.values() for v in table.values())


def test_lua_table_refuses_names_it_cannot_embed():
    with pytest.raises(ValueError):
        lua_tables({"task": {"A": frozenset({"B'; os.exit()"})}})
