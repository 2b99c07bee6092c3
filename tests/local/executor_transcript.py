"""What an agent and plastic's executor exchange, recorded against any master, and its shape to compare.

Recorded once against the compose cluster's Apache Mesos 1.11 agents into tests/local/data/executor-1.11
(``python -m tests.local.executor_transcript --master http://127.0.0.1:5050 --executor-command
"/opt/plastic/bin/python -m plastic.executor" --transcript-dir compose-runs/transcript --out
tests/local/data/executor-1.11``; the transcript directory must be one the agents write and this machine
reads); tests/local/test_executor_transcript.py records the same exchange against the local cluster and
holds it to the real one's shape: the event types and the fields each carries, the answers to calls,
the updates each task sent and which were acknowledged, and the agent's answers to bad calls.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from tests.local.executor_scenarios import executor_task
from tests.local.rawmesos import Scheduler, attrs, raw_request, scalar
from tests.waiting import eventually

JSON = [("Content-Type", "application/json")]
TASKS = {"tx-ok": "echo ok", "tx-fails": "echo boom >&2; exit 3", "tx-killed": "sleep 60"}


def bad_calls(framework_id: str) -> list[tuple[str, list[tuple[str, str]], bytes]]:
    ids = {"framework_id": {"value": framework_id}, "executor_id": {"value": "plastic"}}
    return [
        ("GET", [], b""),
        ("POST", [], b"{}"),
        ("POST", [("Content-Type", "text/plain")], b"{}"),
        ("POST", JSON, b"{"),
        ("POST", JSON, json.dumps({"type": "SUBSCRIBE", "framework_id": {"value": "nope"},
                                   "executor_id": {"value": "plastic"}, "subscribe": {}}).encode()),
        ("POST", JSON, json.dumps({"type": "SUBSCRIBE", **ids}).encode()),
        ("POST", JSON, json.dumps({"type": "UPDATE", **ids, "update": {"status": {
            "task_id": {"value": "t"}, "state": "TASK_RUNNING", "source": "SOURCE_EXECUTOR"}}}).encode()),
        ("POST", JSON, json.dumps({"type": "UPDATE", **ids, "update": {"status": {  # 16 bytes, no version
            "task_id": {"value": "t"}, "state": "TASK_RUNNING", "source": "SOURCE_EXECUTOR",
            "uuid": "AAAAAAAAAAAAAAAAAAAAAA=="}}}).encode()),
        ("POST", JSON, json.dumps({"type": "UPDATE", **ids, "update": {"status": {  # a version 4 UUID
            "task_id": {"value": "t"}, "state": "TASK_RUNNING", "source": "SOURCE_MASTER",
            "uuid": "AAAAAAAAQACAAAAAAAAAAA=="}}}).encode()),
        ("POST", JSON, json.dumps({"type": "UPDATE", **ids, "update": {"status": {
            "task_id": {"value": "t"}, "state": "TASK_STAGING", "source": "SOURCE_EXECUTOR",
            "uuid": "AAAAAAAAQACAAAAAAAAAAA=="}}}).encode()),
    ]


def record(master_url: str, executor_command: str, transcript: Path, agent_sees: str | None = None) -> dict[str, Any]:
    """Run the scenario; returns {"transcript": [...lines...], "bad_calls": [...answers...]}.  ``agent_sees``:
    where the agents find ``transcript`` (in their container), when it is not the same path."""
    transcript.unlink(missing_ok=True)
    s = Scheduler(master_url, "executor-transcript")
    s.body["subscribe"]["framework_info"]["checkpoint"] = True
    s.subscribe()
    try:
        offer = s.take_offer(lambda o: attrs(o)["cluster"] == "core" and scalar(o["resources"], "cpus") >= 1,
                             timeout=30)
        agent = offer["agent_id"]["value"]
        command = f"{executor_command}"
        infos = [executor_task(tid, agent, cmd, command) for tid, cmd in TASKS.items()]
        for info in infos:
            info["executor"]["command"]["environment"] = {"variables": [
                {"name": "PLASTIC_EXECUTOR_TRANSCRIPT", "value": agent_sees or str(transcript)}]}
        assert s.accept([offer["id"]["value"]], infos, refuse_seconds=0.0).status_code == 202
        s.wait_update("tx-ok", "TASK_FINISHED", timeout=60)
        s.wait_update("tx-fails", "TASK_FAILED", timeout=60)
        running = s.wait_update("tx-killed", "TASK_RUNNING", timeout=60)
        s.call("KILL", kill={"task_id": {"value": "tx-killed"}, "agent_id": running["agent_id"]})
        s.wait_update("tx-killed", "TASK_KILLED", timeout=60)

        def all_acknowledged() -> bool:
            lines = read(transcript)
            acked = sum(1 for line in lines if line["dir"] == "event" and line["doc"]["type"] == "ACKNOWLEDGED")
            sent = {line["doc"]["update"]["status"]["uuid"] for line in lines
                    if line["dir"] == "call" and line["doc"]["type"] == "UPDATE"}
            return acked >= len(sent) > 0

        eventually(all_acknowledged, timeout=60, what="every update acknowledged to the executor")
        agent_url = _agent_url(offer)
        answers = []
        for method, headers, body in bad_calls(s.framework_id or ""):
            code, hdrs, rest = raw_request(agent_url, method, "/api/v1/executor", body, headers)
            answers.append({"method": method, "headers": headers, "body": body.decode(), "status": code,
                            "answer": _unchunk(rest, hdrs).decode(errors="replace").strip()})
    finally:
        s.call("TEARDOWN")
        s.shutdown()
    eventually(lambda: any(line["dir"] == "event" and line["doc"]["type"] == "SHUTDOWN"
                           for line in read(transcript)), timeout=60, what="the executor's SHUTDOWN")
    return {"transcript": read(transcript), "bad_calls": answers}


def _agent_url(offer: dict) -> str:
    url = offer.get("url") or {}
    addr = url.get("address") or {}
    return f"http://{addr.get('ip') or addr.get('hostname') or offer['hostname']}:{addr['port']}"


def _unchunk(body: bytes, headers: dict) -> bytes:
    if headers.get("transfer-encoding", "").lower() != "chunked":
        return body
    out, rest = b"", body
    while rest:
        size, _, rest = rest.partition(b"\r\n")
        n = int(size.split(b";")[0] or b"0", 16)
        if n == 0:
            break
        out, rest = out + rest[:n], rest[n + 2:]
    return out


def read(path: Path) -> list[dict[str, Any]]:
    try:
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    except FileNotFoundError:
        return []


def shape(transcript: list[dict[str, Any]]) -> dict[str, Any]:
    """What must be the same whoever the agent is: per event type the fields it carries (and those of its
    payload), the answers to each call type, each task's updates in order and which were acknowledged."""
    events: dict[str, set[str]] = {}
    answers: dict[str, set[int]] = {}
    updates: dict[str, list[str]] = {}
    acked: dict[str, int] = {}
    last_call = None
    for line in transcript:
        doc = line["doc"]
        if line["dir"] == "event":
            kind = doc["type"]
            payload = doc.get(kind.lower())
            keys = events.setdefault(kind, set())
            keys.update(k for k in doc if k != "type")
            if isinstance(payload, dict):
                keys.update(f"{kind.lower()}.{k}" for k in payload)
                if kind == "LAUNCH":
                    keys.update(f"launch.task.{k}" for k in payload.get("task", {}))
                if kind == "ACKNOWLEDGED":
                    tid = payload["task_id"]["value"]
                    acked[tid] = acked.get(tid, 0) + 1
        elif line["dir"] == "call":
            last_call = doc["type"]
            if last_call == "UPDATE":
                st = doc["update"]["status"]
                updates.setdefault(st["task_id"]["value"], []).append(st["state"])
        elif line["dir"] == "answer" and last_call:
            answers.setdefault(last_call, set()).add(doc["status"])
    return {"events": {k: sorted(v) for k, v in events.items()}, "answers": {k: sorted(v) for k, v in answers.items()},
            "updates": updates, "acknowledged": acked}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--master", required=True)
    parser.add_argument("--executor-command", required=True)
    parser.add_argument("--transcript-dir", required=True, type=Path)
    parser.add_argument("--agents-see-it-as", help="the transcript directory's path in the agents' containers")
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args()
    args.transcript_dir.mkdir(parents=True, exist_ok=True)
    got = record(args.master, args.executor_command, args.transcript_dir / "executor.jsonl",
                 f"{args.agents_see_it_as}/executor.jsonl" if args.agents_see_it_as else None)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "transcript.jsonl").write_text("".join(json.dumps(line) + "\n" for line in got["transcript"]))
    (args.out / "bad_calls.json").write_text(json.dumps(got["bad_calls"], indent=1) + "\n")
    print(json.dumps(shape(got["transcript"]), indent=1))
    print(f"recorded from {urlsplit(args.master).netloc}: {len(got['transcript'])} lines, "
          f"{len(got['bad_calls'])} bad calls")


if __name__ == "__main__":
    main()
