"""How long cwltool takes to load a workflow lowered by `plastic lower`, and how many HTTP requests
it makes: as plastic lowers it (the http(s) classes of its hints declared in `$namespaces`)
against the same document without those declarations (what `plastic lower` wrote before).

Without the declarations schema-salad checks the `arv:UsePreemptible` class link with an HTTP
HEAD once per occurrence for every step it loads (steps x steps requests, failures never cached).
Each load runs `cwltool --validate` with HTTP(S)_PROXY pointing at a local server that counts the
requests and refuses them at once (a machine without a network, minus the DNS waits), and once
with the environment as it is, capped at `--cap` seconds.

    python bench/lowered_load.py            # the 103-step Montage trace workflow
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import machine
from tests.cwl.netrecord import proxy_env, proxy_recorder

REPO = Path(__file__).resolve().parents[1]
DEFAULT = REPO / "bench" / "workflows" / "trace-montage-chameleon-2mass-01d-001.cwl"


def undeclared(lowered: Path, out: Path) -> Path:
    """The lowered document without the `$namespaces` entries that name themselves."""
    doc = json.loads(lowered.read_text()) if lowered.suffix == ".json" else None
    if doc is None:
        from ruamel.yaml import YAML

        doc = YAML(typ="safe").load(lowered.read_text())
    doc["$namespaces"] = {k: v for k, v in doc.get("$namespaces", {}).items() if k != v}
    out.write_text(json.dumps(doc))
    return out


def load(doc: Path, env: dict[str, str], cap_s: float) -> tuple[float | None, int]:
    cwltool = str(Path(sys.executable).parent / "cwltool")
    t0 = time.monotonic()
    try:
        res = subprocess.run([cwltool, "--validate", str(doc)], env=env, capture_output=True, text=True,
                             timeout=cap_s, check=False)
    except subprocess.TimeoutExpired:
        return None, -1
    if res.returncode != 0:
        raise SystemExit(f"cwltool --validate {doc} failed:\n{res.stderr[-2000:]}")
    return time.monotonic() - t0, 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("workflow", nargs="?", type=Path, default=DEFAULT)
    ap.add_argument("--cap", type=float, default=300.0, help="Give up on one load after this long (default 300 s).")
    ap.add_argument("--no-default-env", action="store_true", help="Only the counting-proxy loads.")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="plastic-lowered-load-") as tmp:
        work = Path(tmp)
        res = subprocess.run([sys.executable, "-m", "plastic", "lower", str(args.workflow), "--outdir", str(work / "lw")],
                             capture_output=True, text=True, check=False)
        if res.returncode != 0:
            raise SystemExit(f"plastic lower failed: {res.stderr}")
        lowered = next(p for p in (work / "lw").iterdir() if p.suffix in (".cwl", ".json") and p.name != "policy.json")
        old = undeclared(lowered, work / "lw" / "undeclared.cwl")
        steps = len(json.loads(old.read_text()).get("$graph", [])) - 1
        rows = []
        for name, doc in (("as plastic lowers it", lowered), ("without the declarations (before)", old)):
            with proxy_recorder() as proxy:
                seconds, _ = load(doc, proxy_env(proxy.url), args.cap)
                requests = len(proxy.requests)
            row = {"document": name, "proxy_s": seconds, "requests": requests}
            if not args.no_default_env:
                row["default_s"], _ = load(doc, dict(os.environ), args.cap)
            rows.append(row)
            print(f"  {name}: {seconds if seconds is not None else '>cap'} s, {requests} requests", flush=True)
    print(f"\ncwltool --validate of {args.workflow.name} lowered ({steps} tool copies)")
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {machine()}")

    def fmt(v: float | None) -> str:
        return f">{args.cap:g}" if v is None else f"{v:.1f}"

    print(f"{'document':36} {'counting proxy s':>16} {'HTTP requests':>13} {'default env s':>13}")
    for r in rows:
        print(f"{r['document']:36} {fmt(r['proxy_s']):>16} {r['requests']:>13} "
              f"{fmt(r['default_s']) if 'default_s' in r else '-':>13}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
