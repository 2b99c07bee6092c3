"""bench/s3_job_store.py: a run with its job store in S3 (moto) against the run directory's file: job store.

    python bench/s3_job_store.py [--rounds 3] [--parts 12]

The bundled scatter-gather example (its own local cluster and Redis, `parts` sort tasks), through
`plastic run --static --job-store s3` against moto in server mode (started here, in this process), and
through `plastic run --static --job-store file` (the baseline: what a run on one machine or on a shared
file system uses), alternating, `rounds` times each.  Prints each run's wall time, the S3 requests the
S3 run made (every process's, by operation, from tests/aws/call_log) and that the output is right.
moto answers from memory on this machine, so the figures are plastic's and Toil's own work and the
requests' round trips, not S3's latency: a real bucket adds its own to every request, and moto's work
(its CPU time, printed: the server runs in this process) is not on the run's machine there.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.common import machine, plastic_env  # noqa: E402

EXAMPLE = REPO / "cwl-examples" / "scatter-gather"
CALL_LOG = REPO / "tests" / "aws" / "call_log"


def start_moto() -> str:
    import logging

    import pytest
    from moto.server import ThreadedMotoServer

    from tests.aws.helpers import take_toils_encryption_rule

    take_toils_encryption_rule(pytest.MonkeyPatch())  # moto's gap, as in the tests (for the process's life)
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    return f"http://{host}:{port}"


def _children_cpu() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def one_run(kind: str, parts: int, where: Path, url: str, n: int) -> dict:
    where.mkdir(parents=True)
    job = where / "job.yml"
    parts_list = json.dumps(list(range(1, parts + 1)))
    job.write_text(f"text: {{class: File, path: {EXAMPLE / 'input.txt'}}}\nparts: {parts_list}\n")
    env = plastic_env() | {"AWS_ENDPOINT_URL": url, "AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench",
                           "AWS_REGION": "us-east-1", "AWS_DEFAULT_REGION": "us-east-1",
                           "AWS_EC2_METADATA_DISABLED": "true", "PLASTIC_TEST_AWS_CALLS": str(where / "calls"),
                           "PYTHONPATH": str(CALL_LOG)}
    cmd = [sys.executable, "-m", "plastic", "run", str(EXAMPLE / "scatter-gather.cwl"), str(job), "--static",
           "--job-store", kind, "--outdir", str(where / "out"), "--run-dir", str(where / "run"), "--quiet",
           "--run-id", f"bench-{kind}-{n}"]
    t0, cpu0, kids0 = time.monotonic(), time.process_time(), _children_cpu()
    res = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=where, timeout=900, check=False)
    wall, moto_cpu = time.monotonic() - t0, time.process_time() - cpu0  # this process: moto's server
    run_cpu = _children_cpu() - kids0  # the run and every process under it (all waited for by the end)
    calls = Counter(line.split()[1] for line in (where / "calls").read_text().splitlines()
                    if line.startswith("s3 ")) if (where / "calls").exists() else Counter()
    out = where / "out" / "sorted.txt"
    ok = res.returncode == 0 and out.exists()
    digest = hashlib.sha1(out.read_bytes()).hexdigest() if ok else None
    if not ok:
        print(res.stderr[-2000:], file=sys.stderr)
    return {"kind": kind, "wall_s": wall, "moto_cpu_s": moto_cpu, "run_cpu_s": run_cpu, "rc": res.returncode,
            "sha1": digest, "s3_calls": dict(calls)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--parts", type=int, default=12)
    ap.add_argument("--json", help="write the figures here too")
    args = ap.parse_args()
    url = start_moto()
    rows = []
    with tempfile.TemporaryDirectory(prefix="plastic-s3-bench-") as tmp:
        for n in range(args.rounds):
            for kind in ("s3", "file"):
                row = one_run(kind, args.parts, Path(tmp) / f"{kind}-{n}", url, n)
                rows.append(row)
                print(f"  round {n + 1} {kind:<4}: {row['wall_s']:6.1f} s, rc {row['rc']}, "
                      f"{sum(row['s3_calls'].values())} S3 requests, moto's CPU {row['moto_cpu_s']:.1f} s, "
                      f"the run's CPU {row['run_cpu_s']:.1f} s",
                      file=sys.stderr, flush=True)
    import boto3

    left = boto3.client("s3", endpoint_url=url, region_name="us-east-1", aws_access_key_id="bench",
                        aws_secret_access_key="bench").list_buckets()["Buckets"]
    expected = json.loads((EXAMPLE / "expected-output.json").read_text())["sorted"]["checksum"].removeprefix("sha1$")
    print(f"\nscatter-gather, {args.parts} parts, static local cluster, job store in moto's S3 vs the run "
          f"directory; {machine()}")
    print(f"{'job store':<10}{'runs':>5}{'wall s min':>11}{'median':>8}{'max':>7}{'S3 requests':>13}"
          f"{'moto CPU s':>11}{'run CPU s':>10}{'output':>8}")
    for kind in ("s3", "file"):
        mine = [r for r in rows if r["kind"] == kind]
        walls = [r["wall_s"] for r in mine]
        requests = statistics.median(sum(r["s3_calls"].values()) for r in mine)
        right = all(r["sha1"] == expected for r in mine) if args.parts == 12 else all(r["rc"] == 0 for r in mine)
        moto_cpu = statistics.median(r["moto_cpu_s"] for r in mine)
        run_cpu = statistics.median(r["run_cpu_s"] for r in mine)
        print(f"{kind:<10}{len(mine):>5}{min(walls):>11.1f}{statistics.median(walls):>8.1f}{max(walls):>7.1f}"
              f"{requests:>13.0f}{moto_cpu:>11.1f}{run_cpu:>10.1f}{'right' if right else 'WRONG':>8}")
    s3_calls: Counter = Counter()
    for r in rows:
        if r["kind"] == "s3":
            s3_calls.update(r["s3_calls"])
    runs = max(1, sum(1 for r in rows if r["kind"] == "s3"))
    print("S3 requests of one run, by operation (mean): " + ", ".join(
        f"{op} {count / runs:.0f}" for op, count in s3_calls.most_common()))
    print(f"buckets left in moto after all runs: {len(left)}")
    if args.json:
        Path(args.json).write_text(json.dumps({"machine": machine(), "rows": rows, "left": len(left)}, indent=2) + "\n")


if __name__ == "__main__":
    main()
