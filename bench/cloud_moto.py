"""bench/cloud_moto.py: `plastic cloud up` and `down` of a 50-node plan against moto in server mode.

    python bench/cloud_moto.py [--nodes 50] [--repeats 3] [--control-plane]

moto (a real HTTP endpoint started here, reached through AWS_ENDPOINT_URL) stands in for EC2: it
answers at once, so the figures are plastic's own work and its API round trips, not AWS's boot
times.  Prints the API calls made (by operation), the wall time of up and of down, and what is left
tagged with the run after down (must be 0).  With --control-plane, `up` also makes the run's control plane
(its secrets made here, its instance, volume, and Redis opened to one address), and the agents join it.  The baseline beside it: one RunInstances per node (what a
script launching the plan's nodes one by one would call).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import machine  # noqa: E402


def plan_doc(nodes: int) -> dict:
    core = max(1, nodes // 25)
    small = (nodes - core) // 2
    large = nodes - core - small
    return {"schema": "plastic.plan/v1", "clusters": [
        {"name": "core", "instance_type": "c5.large", "market": "on-demand", "count": core},
        {"name": "burst-small", "instance_type": "m5.large", "market": "spot", "count": small},
        {"name": "burst-large", "instance_type": "c5.2xlarge", "market": "spot", "count": large}]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=50)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--control-plane", action="store_true", help="cloud up --control-plane")
    args = ap.parse_args()

    import logging

    import boto3
    import httpx
    from moto.server import ThreadedMotoServer

    from plastic.aws import cloud
    from plastic.aws.control_plane import ControlPlaneSettings
    from plastic.aws.control_plane_secrets import load_or_make
    from plastic.aws.ec2_cloud import Aws, NodeSettings
    from plastic.catalogs import load_catalog

    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    url = f"http://{host}:{port}"
    os.environ.update(AWS_ENDPOINT_URL=url, AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench",
                      AWS_DEFAULT_REGION="us-east-1", AWS_REGION="us-east-1", AWS_EC2_METADATA_DISABLED="true")
    catalog = load_catalog(None)
    rows = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            os.environ["PLASTIC_HOME"] = str(Path(tmp) / "home")  # the control planes' secrets
            plane = ControlPlaneSettings(allow_from=("198.51.100.7/32",)) if args.control_plane else None
            plan = Path(tmp) / "plan.json"
            plan.write_text(json.dumps(plan_doc(args.nodes)))
            orders = cloud.read_orders(str(plan), catalog)
            for k in range(args.repeats):
                httpx.post(f"{url}/moto-api/reset")
                image = boto3.client("ec2").describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
                run_id = f"bench{k}"
                aws = Aws.connect(None)
                t0 = time.perf_counter()
                secrets = load_or_make(run_id) if plane else None
                res = cloud.up(aws, run_id, orders, catalog, NodeSettings(image_id=image, master="m:5050",
                                                                         redis="redis://r:6379/0"),
                               control_plane=plane, secrets=secrets)
                up_s = time.perf_counter() - t0
                up_calls = Counter(aws.operations())
                obtained = sum(sum(v.values()) for v in res.obtained.values())
                again = Aws.connect(None)
                t0 = time.perf_counter()
                cloud.up(again, run_id, orders, catalog, NodeSettings(image_id=image, master="m:5050",
                                                                      redis="redis://r:6379/0"),
                         control_plane=plane, secrets=load_or_make(run_id) if plane else None)
                again_s = time.perf_counter() - t0
                down_aws = Aws.connect(None)
                t0 = time.perf_counter()
                removed = cloud.down(down_aws, run_id, wait_s=30)
                down_s = time.perf_counter() - t0
                left = cloud.leftovers(Aws.connect(None), run_id)
                # the baseline: one RunInstances per node, then one TerminateInstances per node
                ec2 = boto3.client("ec2")
                t0 = time.perf_counter()
                ids = [ec2.run_instances(ImageId=image, InstanceType=o.instance_type, MinCount=1, MaxCount=1)
                       ["Instances"][0]["InstanceId"] for o in orders for _ in range(o.count)]
                base_up_s = time.perf_counter() - t0
                t0 = time.perf_counter()
                for i in ids:
                    ec2.terminate_instances(InstanceIds=[i])
                base_down_s = time.perf_counter() - t0
                rows.append({"obtained": obtained, "up_s": up_s, "up_calls": sum(up_calls.values()),
                             "by_op": dict(up_calls), "again_s": again_s, "again_calls": len(again.calls),
                             "again_created": again.operations().count("ec2:CreateFleet"),
                             "down_s": down_s, "down_calls": len(down_aws.calls), "removed": len(removed),
                             "left": left, "base_up_s": base_up_s, "base_down_s": base_down_s,
                             "base_calls": 2 * len(ids)})
    finally:
        server.stop()
    with_plane = " with --control-plane" if args.control_plane else ""
    print(f"plastic cloud up{with_plane} / down of a {args.nodes}-node plan against moto (server mode); {machine()}")
    print(f"{'run':>3} {'obtained':>8} {'up s':>6} {'up calls':>8} {'again s':>7} {'again calls':>11} "
          f"{'down s':>6} {'down calls':>10} {'removed':>7} {'left':>4} | {'1-by-1 up s':>11} {'down s':>6} "
          f"{'calls':>5}")
    for k, r in enumerate(rows):
        print(f"{k:>3} {r['obtained']:>8} {r['up_s']:>6.2f} {r['up_calls']:>8} {r['again_s']:>7.2f} "
              f"{r['again_calls']:>11} {r['down_s']:>6.2f} {r['down_calls']:>10} {r['removed']:>7} "
              f"{sum(r['left'].values()):>4} | {r['base_up_s']:>11.2f} {r['base_down_s']:>6.2f} {r['base_calls']:>5}")
    med = {key: statistics.median(r[key] for r in rows) for key in ("up_s", "down_s", "base_up_s", "base_down_s")}
    print(f"median: up {med['up_s']:.2f} s, down {med['down_s']:.2f} s; one-by-one: up {med['base_up_s']:.2f} s, "
          f"down {med['base_down_s']:.2f} s")
    print("up calls by operation:", ", ".join(f"{op} {n}" for op, n in sorted(rows[0]["by_op"].items())))
    print("a repeated up created", rows[0]["again_created"], "fleet(s); left after down:", rows[0]["left"])


if __name__ == "__main__":
    main()
