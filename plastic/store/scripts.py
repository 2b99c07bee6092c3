"""The store's Lua scripts: each write that must check before it changes runs as one script.

The transition tables are *generated* into the Lua source from
`plastic.core.book.lifecycle.TABLES`, so the Python table stays the one source of truth:
change it and the script (and its SHA) changes with it.  A script reads the current
state, checks it (against an expected state when given, and against the table),
moves the id between the per-state sets, updates the hash, appends the event to the
run's stream (XADD MAXLEN ~) and, for tasks, the ended attempt: all in one round
trip, atomically (Redis runs a script with nothing interleaved).

Refusals come back as error replies whose first word is a ``PLASTIC_*`` code
followed by JSON (`plastic.store.store_errors.translate` turns them into exceptions), so
they surface the same way whether the script ran alone or inside a pipeline.

Times come from the server's ``TIME`` (Redis >= 5 replicates scripts by effects, so
this is allowed and the AOF records the values written).

`LuaScript` calls ``EVALSHA`` and falls back to ``EVAL`` (which also caches the
script) when the server answers ``NOSCRIPT``, e.g. after a restart.  Inside a
pipeline it lets redis-py load missing scripts before the pipeline runs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from redis import Redis
from redis.client import Pipeline
from redis.exceptions import NoScriptError

from plastic.core.book.lifecycle import TABLES, AgentState, RunState, TaskState

# The state a record is created in.
INITIAL: Mapping[str, str] = {"task": TaskState.QUEUED, "agent": AgentState.ACTIVE, "run": RunState.SUBMITTED}

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def lua_tables(tables: Mapping[str, Mapping[Any, frozenset]] = TABLES) -> str:
    """The transition tables as a Lua literal: ``TABLES[kind][from][to] == true`` when allowed."""
    lines = ["local TABLES = {"]
    for kind, table in tables.items():
        lines.append(f"  [{json.dumps(kind)}] = {{")
        for source, targets in table.items():
            for name in (source, *targets):
                if not _NAME.match(str(name)):
                    raise ValueError(f"state name {name!r} cannot be embedded in Lua")
            inner = ", ".join(f"[{json.dumps(str(t))}] = true" for t in sorted(targets))
            lines.append(f"    [{json.dumps(str(source))}] = {{{inner}}},")
        lines.append("  },")
    lines.append("}")
    return "\n".join(lines)


# Shared helpers: the server clock as "seconds.micros", and reading counted groups of ARGV.
_PRELUDE = r"""
local function now()
  local t = redis.call('TIME')
  return t[1] .. '.' .. string.format('%06d', tonumber(t[2]))
end
local function take_pairs(i)
  local n = tonumber(ARGV[i])
  local out = {}
  for j = i + 1, i + 2 * n do out[#out + 1] = ARGV[j] end
  return out, i + 1 + 2 * n
end
local function take_list(i)
  local n = tonumber(ARGV[i])
  local out = {}
  for j = i + 1, i + n do out[#out + 1] = ARGV[j] end
  return out, i + 1 + n
end
local function fail(code, doc)
  return redis.error_reply(code .. ' ' .. cjson.encode(doc))
end
"""

# KEYS: record hash, event stream, [attempts list]
# ARGV: kind, id, wanted, expected|'', state-set prefix, maxlen,
#       n, (field, value)*   set
#       n, field*            delete
#       n, (field, delta)*   HINCRBY
#       n, (name, value)*    extra event fields
#       attempt JSON|''      appended to KEYS[3]
TRANSITION = (
    lua_tables()
    + _PRELUDE
    + r"""
local kind, id, wanted, expected, set_prefix, maxlen = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6]
local table_ = TABLES[kind]
if table_ == nil then return fail('PLASTIC_BADKIND', {kind = kind, id = id}) end
local current = redis.call('HGET', KEYS[1], 'state')
if not current then return fail('PLASTIC_MISSING', {kind = kind, id = id}) end
if (expected ~= '' and current ~= expected) or table_[current] == nil or not table_[current][wanted] then
  return fail('PLASTIC_REJECTED', {kind = kind, id = id, current = current, wanted = wanted, expected = expected})
end
local sets, dels, incrs, extra
local i = 7
sets, i = take_pairs(i)
dels, i = take_list(i)
incrs, i = take_pairs(i)
extra, i = take_pairs(i)
local attempt = ARGV[i]
local at = now()
redis.call('SREM', set_prefix .. current, id)
redis.call('SADD', set_prefix .. wanted, id)
redis.call('HSET', KEYS[1], 'state', wanted, 'updated_at', at, 'state_at', at)
if #sets > 0 then redis.call('HSET', KEYS[1], unpack(sets)) end
if #dels > 0 then redis.call('HDEL', KEYS[1], unpack(dels)) end
for j = 1, #incrs, 2 do redis.call('HINCRBY', KEYS[1], incrs[j], incrs[j + 1]) end
if attempt ~= nil and attempt ~= '' and KEYS[3] ~= nil then redis.call('RPUSH', KEYS[3], attempt) end
local event_id = redis.call('XADD', KEYS[2], 'MAXLEN', '~', maxlen, '*',
  'type', 'transition', 'kind', kind, 'id', id, 'from', current, 'to', wanted, 'at', at, unpack(extra))
return {current, at, event_id}
"""
)

# KEYS: run hash, runs index (zset), the initial state's set, event stream
# ARGV: run id, initial state, maxlen, n, (field, value)*
CREATE_RUN = (
    _PRELUDE
    + r"""
local run_id, state, maxlen = ARGV[1], ARGV[2], ARGV[3]
if redis.call('EXISTS', KEYS[1]) == 1 then return fail('PLASTIC_EXISTS', {kind = 'run', id = run_id}) end
local fields = take_pairs(4)
local at = now()
redis.call('HSET', KEYS[1], 'id', run_id, 'state', state, 'created_at', at, 'updated_at', at, 'state_at', at)
if #fields > 0 then redis.call('HSET', KEYS[1], unpack(fields)) end
redis.call('ZADD', KEYS[2], at, run_id)
redis.call('SADD', KEYS[3], run_id)
redis.call('XADD', KEYS[4], 'MAXLEN', '~', maxlen, '*', 'type', 'run_created', 'kind', 'run', 'id', run_id,
  'to', state, 'at', at)
return at
"""
)

# KEYS: run hash, task index (zset), the initial state's set, event stream
# ARGV: run id, initial state, task key prefix, maxlen, (task id, spec JSON)*
# Returns the ids actually added (an id already present is left alone).
ADD_TASKS = (
    _PRELUDE
    + r"""
local run_id, state, task_prefix, maxlen = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
if redis.call('EXISTS', KEYS[1]) == 0 then return fail('PLASTIC_MISSING', {kind = 'run', id = run_id}) end
local at = now()
local position = redis.call('ZCARD', KEYS[2])
local added = {}
for i = 5, #ARGV, 2 do
  local task_id, spec = ARGV[i], ARGV[i + 1]
  local key = task_prefix .. task_id
  if redis.call('EXISTS', key) == 0 then
    redis.call('HSET', key, 'id', task_id, 'run', run_id, 'spec', spec, 'state', state, 'attempts', 0,
      'created_at', at, 'updated_at', at, 'state_at', at)
    redis.call('ZADD', KEYS[2], 'NX', position, task_id)
    position = position + 1
    redis.call('SADD', KEYS[3], task_id)
    added[#added + 1] = task_id
  end
end
if #added > 0 then
  redis.call('XADD', KEYS[4], 'MAXLEN', '~', maxlen, '*', 'type', 'tasks_added', 'count', #added, 'at', at)
end
return added
"""
)

# KEYS: agent hash, agents index (set), the initial state's set, event stream
# ARGV: agent id, initial state, maxlen, n, (field, value)*
# Creates the agent in the initial state, or updates its fields and leaves its state alone.
# Returns {1 if created else 0, state}.
UPSERT_AGENT = (
    _PRELUDE
    + r"""
local agent_id, state, maxlen = ARGV[1], ARGV[2], ARGV[3]
local fields = take_pairs(4)
local at = now()
local current = redis.call('HGET', KEYS[1], 'state')
if current then
  redis.call('HSET', KEYS[1], 'updated_at', at)
  if #fields > 0 then redis.call('HSET', KEYS[1], unpack(fields)) end
  return {0, current}
end
redis.call('HSET', KEYS[1], 'id', agent_id, 'state', state, 'created_at', at, 'updated_at', at, 'state_at', at)
if #fields > 0 then redis.call('HSET', KEYS[1], unpack(fields)) end
redis.call('SADD', KEYS[2], agent_id)
redis.call('SADD', KEYS[3], agent_id)
redis.call('XADD', KEYS[4], 'MAXLEN', '~', maxlen, '*', 'type', 'agent_added', 'kind', 'agent', 'id', agent_id,
  'to', state, 'at', at)
return {1, state}
"""
)


# KEYS: the (kind, target) marker, the notices stream
# ARGV: marker TTL seconds, maxlen, (field, value)*
# Returns the new stream id, or false when this (kind, target) was published already.
PUBLISH_NOTICE = (
    _PRELUDE
    + r"""
local ttl, maxlen = ARGV[1], ARGV[2]
local fields = take_pairs(3)
local at = now()
if not redis.call('SET', KEYS[1], at, 'NX', 'EX', ttl) then return false end
return redis.call('XADD', KEYS[2], 'MAXLEN', '~', maxlen, '*', 'published_at', at, unpack(fields))
"""
)


class LuaScript:
    """One script bound to a client: EVALSHA, EVAL when the server does not know it yet."""

    def __init__(self, client: Redis, source: str):
        self.source = source
        self._script = client.register_script(source)  # computes the SHA; handles pipelines
        self.sha = self._script.sha
        self._client = client

    def __call__(self, keys: Sequence[str], args: Sequence[Any], pipeline: Pipeline | None = None) -> Any:
        if pipeline is not None:
            return self._script(keys=keys, args=args, client=pipeline)
        try:
            return self._client.evalsha(self.sha, len(keys), *keys, *args)
        except NoScriptError:
            return self._client.eval(self.source, len(keys), *keys, *args)


def counted_pairs(mapping: Mapping[str, str] | None) -> list[str]:
    """``n, k1, v1, ..., kn, vn`` for a script's ARGV."""
    items = list((mapping or {}).items())
    out: list[str] = [str(len(items))]
    for key, value in items:
        out += [key, value]
    return out


def counted_list(values: Sequence[str] | None) -> list[str]:
    values = list(values or ())
    return [str(len(values)), *values]
