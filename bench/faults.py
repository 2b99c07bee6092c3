"""bench/faults.py: what a fault under a run costs: the slow scatter (3 x `sleep S`, then a gather)
undisturbed, and with each fault plastic is tested against, in one session.

    python bench/faults.py [--seconds 12] [--down 6]

Faults: an external Redis SIGKILLed while tasks run and started again --down seconds later; the run's
embedded Redis SIGKILLed (plastic run starts it again); the Mesos master of a `--master` local cluster
SIGKILLed and started again (a failover in which no agent comes back: the running tasks run again);
the run directory's disk filled below the floor (the run stops, exit 75) and `--resume` once space is
back (root only: a tmpfs).  Prints, per case: the exit, the output right or not, the wall time from
start to the output against the undisturbed run, attempts (Mesos tasks) against the 4 of an
undisturbed run, and what plastic said (the report's notes).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import decisions, machine  # noqa: E402
from tests.redis_servers import free_port, start_persistent  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "watch" / "data" / "slow-scatter"
EXPECTED = "item 1\nitem 2\nitem 3\n"
SPEC = {"clusters": [
    {"name": "core", "count": 1, "cpus": 2, "ram_mib": 4096, "preemptible": False, "instance_type": "c5.large"},
    {"name": "burst", "count": 2, "cpus": 2, "ram_mib": 4096, "preemptible": True, "instance_type": "c5.large"}]}


class Case:
    def __init__(self, name: str, work: Path, seconds: int):
        self.name, self.work = name, work
        self.run_dir, self.out = work / "run", work / "out"
        self.job = work / "job.yml"
        self.job.write_text(f"items: [1, 2, 3]\nseconds: {seconds}\n")
        self.env = {k: v for k, v in os.environ.items() if k not in ("PLASTIC_REDIS_URL", "PLASTIC_MIN_FREE_MIB")}

    def start(self, *extra: str) -> subprocess.Popen:
        cmd = [sys.executable, "-m", "plastic", "run", str(DATA / "slow-scatter.cwl"), str(self.job), "--outdir",
               str(self.out), "--run-dir", str(self.run_dir), "--quiet", *extra]
        self.log = open(self.work / "run.log", "ab")
        return subprocess.Popen(cmd, cwd=self.work, env=self.env, stdout=self.log, stderr=self.log)

    def wait_running(self, proc: subprocess.Popen) -> None:
        deadline = time.monotonic() + 120
        while not any(d["kind"] == "running" for d in decisions(self.run_dir)):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{self.name}: no running task ({proc.poll()})")
            time.sleep(0.2)

    def result(self, rcs: list[int], started: float) -> dict:
        wall = time.monotonic() - started
        try:
            report = json.loads((self.run_dir / "report.json").read_text())
        except (OSError, ValueError):
            report = {}
        ok = (self.out / "joined.txt").is_file() and (self.out / "joined.txt").read_text() == EXPECTED
        return {"case": self.name, "exits": rcs, "output_ok": ok, "wall_s": round(wall, 1),
                "attempts": report.get("attempts"), "tasks_finished": report.get("tasks_finished"),
                "notes": [n for n in report.get("notes", []) if "Redis" in n or "space" in n]}


def undisturbed(case: Case) -> dict:
    t0 = time.monotonic()
    proc = case.start()
    return case.result([proc.wait(600)], t0)


def external_redis(case: Case, down_s: float) -> dict:
    port, data = free_port(), case.work / "redis"
    data.mkdir()
    server = start_persistent(port, data)
    t0 = time.monotonic()
    proc = case.start("--redis", f"redis://127.0.0.1:{port}/0")
    case.wait_running(proc)
    server.send_signal(signal.SIGKILL)
    server.wait()
    time.sleep(down_s)
    server = start_persistent(port, data)
    try:
        return case.result([proc.wait(600)], t0)
    finally:
        server.terminate()
        server.wait()


def embedded_redis(case: Case) -> dict:
    t0 = time.monotonic()
    proc = case.start()
    case.wait_running(proc)
    os.kill(int((case.run_dir / "redis" / "redis.pid").read_text()), signal.SIGKILL)
    return case.result([proc.wait(600)], t0)


def master_restart(case: Case) -> dict:
    from plastic.local.handle import LocalCluster

    with LocalCluster(SPEC, agent_ping_timeout_s=2.0, heartbeat_s=1.0) as cluster:
        t0 = time.monotonic()
        proc = case.start("--master", cluster.master_url)
        case.wait_running(proc)
        cluster.restart_master(downtime_s=2.0)
        return case.result([proc.wait(600)], t0)


def disk_full(case: Case) -> dict | None:
    mount = case.work / "disk"
    mount.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=128m", "tmpfs", str(mount)],
                                           capture_output=True).returncode != 0:
        return None
    case.run_dir = mount / "run"
    try:
        t0 = time.monotonic()
        proc = case.start()
        case.wait_running(proc)
        filler = mount / "filler"
        with open(filler, "wb") as fh:
            fh.write(b"\0" * max(shutil.disk_usage(mount).free - 10 * 1024 * 1024, 0))
        first = proc.wait(600)
        stopped_at = time.monotonic()
        filler.unlink()
        resume = subprocess.run([sys.executable, "-m", "plastic", "run", "--resume", str(case.run_dir), "--quiet"],
                                cwd=case.work, env=case.env, capture_output=True, timeout=600, check=False)
        res = case.result([first, resume.returncode], t0)
        res["stopped_after_s"] = round(stopped_at - t0, 1)
        return res
    finally:
        for _ in range(20):
            if subprocess.run(["umount", str(mount)], capture_output=True).returncode == 0:
                break
            time.sleep(0.5)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=int, default=12, help="each scattered task sleeps this long")
    ap.add_argument("--down", type=float, default=6.0, help="seconds the external Redis stays down")
    args = ap.parse_args()
    print(f"# plastic faults bench, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {machine()}")
    cases: list[tuple[str, Callable[[Case], dict | None]]] = [
        ("undisturbed", undisturbed),
        (f"external Redis killed, back after {args.down:g} s", lambda c: external_redis(c, args.down)),
        ("embedded Redis killed", embedded_redis),
        ("master killed and restarted (--master)", master_restart),
        ("disk filled below the floor, then --resume", disk_full),
    ]
    rows = []
    with tempfile.TemporaryDirectory(prefix="plastic-faults-") as tmp:
        for i, (name, fn) in enumerate(cases):
            work = Path(tmp) / f"case{i}"
            work.mkdir()
            row = fn(Case(name, work, args.seconds))
            if row is None:
                print(f"{name}: skipped (needs root and tmpfs)")
                continue
            rows.append(row)
            print(json.dumps(row))
    base = rows[0]["wall_s"]
    print("\n| case | exit(s) | output | wall s | vs undisturbed | attempts | finished |")
    print("|---|---|---|--:|--:|--:|--:|")
    for r in rows:
        print(f"| {r['case']} | {', '.join(map(str, r['exits']))} | {'right' if r['output_ok'] else 'WRONG'} | "
              f"{r['wall_s']} | {r['wall_s'] / base:.2f} | {r['attempts']} | {r['tasks_finished']} |")
    if not all(r["output_ok"] for r in rows):
        sys.exit(1)


if __name__ == "__main__":
    main()
