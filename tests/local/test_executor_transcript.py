"""The local cluster's side of the executor API held to a real Apache Mesos 1.11 agent's, as recorded from the
compose cluster into tests/local/data/executor-1.11 (tests/local/executor_transcript.py says how): the same
exchange has the same shape, and bad calls get the same answers."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.local.executor_scenarios import core_offer, executor_task, launch
from tests.local.executor_transcript import read, record, shape
from tests.local.rawmesos import raw_request

pytestmark = pytest.mark.cluster

RECORDED = Path(__file__).parent / "data" / "executor-1.11"
EXECUTOR = f"exec {sys.executable} -m plastic.executor"


def test_the_exchange_with_an_agent_has_the_shape_a_real_agent_gives_it(cluster, tmp_path):
    real = shape(read(RECORDED / "transcript.jsonl"))
    local = shape(record(cluster.master_url, EXECUTOR, tmp_path / "executor.jsonl")["transcript"])
    assert local == real


def test_bad_executor_calls_get_the_answers_a_real_agent_gives(cluster, scheduler):
    s = scheduler(cluster.master_url, "executor-bad-calls")
    offer = core_offer(s)
    agent = offer["agent_id"]["value"]
    launch(s, offer, [executor_task("bad-calls-1", agent, "sleep 30", EXECUTOR)])
    s.wait_update("bad-calls-1", "TASK_RUNNING", timeout=30)
    url = f"http://127.0.0.1:{offer['url']['address']['port']}"
    recorded = json.loads((RECORDED / "bad_calls.json").read_text())
    real_framework = next(json.loads(c["body"])["framework_id"]["value"] for c in recorded
                          if c["body"].startswith("{\"") and "nope" not in c["body"])
    for call in recorded:
        body = call["body"].replace(real_framework, s.framework_id or "")
        code, _, rest = raw_request(url, call["method"], "/api/v1/executor", body.encode(),
                                    [tuple(h) for h in call["headers"]])
        answer = rest.decode(errors="replace").strip().replace(s.framework_id or "", real_framework)
        if call["answer"].startswith("Failed to parse body into JSON"):  # the parser's own words after "near:"
            answer, expected = answer.split("near:")[0], call["answer"].split("near:")[0]
        else:
            expected = call["answer"]
        assert (code, answer) == (call["status"], expected), call["body"][:120]
