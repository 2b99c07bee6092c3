"""Redis killed in the middle of a run and started again on the same files.

An external Redis (a real redis-server, AOF with fsync always, as a state store for runs should be)
and the embedded one are SIGKILLed while tasks run; the external one is started again by the test
once the run and the Toil leader have both met its absence, the embedded one by `plastic run` itself.  The run completes with the right output;
in Redis every Toil job (jobStoreID) is FINISHED exactly once and every task's state is the one the
decisions log says the JobBook gave it (nothing lost, nothing applied twice); the leader's log says
how long Redis was away and how many writes waited for it.
"""

from __future__ import annotations

import json
import os
import signal
from collections import Counter
from pathlib import Path

import pytest

from tests.clirun import SlowScatterRun, read_decisions
from tests.redis_servers import free_port, start_persistent

pytest.importorskip("toil")
pytestmark = pytest.mark.toil_e2e

def _check_store(client, run_dir: Path) -> None:
    """Redis holds the JobBook's last word on every task, and one FINISHED per Toil job."""
    from plastic.store import Store

    store = Store(client)
    run_id = json.loads((run_dir / "run.json").read_text())["run_id"]
    assert str(store.get_run(run_id).state).endswith("SUCCEEDED")
    tasks = store.get_tasks(run_id)
    finished = Counter(t.spec.get("job_store_id") for t in tasks if str(t.state).endswith("FINISHED"))
    assert len(finished) == 4 and all(n == 1 for n in finished.values()), finished
    last = {}
    for d in read_decisions(run_dir):
        if d["kind"] == "task_state":
            last[d["job_id"]] = d["to_state"]
    by_id = {t.id: str(t.state).rsplit(".", 1)[-1] for t in tasks}
    assert by_id == {job: state for job, state in last.items()}, (by_id, last)


def test_external_redis_killed_and_restarted_mid_run(tmp_path):
    port = free_port()
    redis_dir = tmp_path / "redis"
    redis_dir.mkdir()
    server = start_persistent(port, redis_dir)
    run = SlowScatterRun(tmp_path, "--redis", f"redis://127.0.0.1:{port}/0")
    try:
        run.wait_running()
        server.send_signal(signal.SIGKILL)
        server.wait(10)
        # away until the run has said so and the leader's writes wait for it (what the logs are checked for)
        toil_log = run.run_dir / "toil.log"
        run.wait_for(lambda: "Redis unreachable" in run.full_log() and toil_log.exists()
                     and "Redis unreachable for" in toil_log.read_text(errors="replace"),
                     "the outage seen by the run and by the Toil leader's writes")
        server = start_persistent(port, redis_dir)
        log_text = run.finish()
        from redis import Redis

        client = Redis(host="127.0.0.1", port=port, decode_responses=True)
        try:
            _check_store(client, run.run_dir)
        finally:
            client.close()
    finally:
        server.terminate()
        server.wait(10)
    toil_log = (run.run_dir / "toil.log").read_text(errors="replace")
    assert "reachable again after" in toil_log and "writes that waited are sent" in toil_log, toil_log[-3000:]
    assert "Redis unreachable" in log_text and "Redis is back after" in log_text, log_text[-3000:]
    report = json.loads((run.run_dir / "report.json").read_text())
    assert any("Redis was unreachable 1 time(s)" in n for n in report["notes"]), report["notes"]


def test_embedded_redis_killed_mid_run_is_started_again(tmp_path):
    run = SlowScatterRun(tmp_path)
    run.wait_running()
    first = int((run.run_dir / "redis" / "redis.pid").read_text())
    os.kill(first, signal.SIGKILL)
    log_text = run.finish()
    assert "embedded Redis" in log_text and "started again" in log_text, log_text[-3000:]
    report = json.loads((run.run_dir / "report.json").read_text())
    assert any("started again 1 time(s)" in n for n in report["notes"]), report["notes"]
    from plastic.store import start_embedded

    server = start_embedded(run.run_dir / "redis")
    try:
        assert server.pid != first
        client = server.client()
        _check_store(client, run.run_dir)
        client.close()
    finally:
        server.stop()
