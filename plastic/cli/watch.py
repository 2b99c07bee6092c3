"""`plastic agent-watch`: publish this machine's spot notices (EC2 IMDS) into plastic's Redis.

Run one per spot machine (next to its Mesos agent); the framework's notices thread
(plastic.framework.notices) turns what it publishes into drains, kills and requeues.  See
plastic.watch.watcher for what is polled and published.  Exits 0 on SIGTERM/SIGINT, and by
itself ``--grace`` seconds after the interruption time.  Bad options: one line, exit 2.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading

import click

from plastic.cli.options import URL, Seconds
from plastic.cli.redis_opts import redis_options
from plastic.core.errors import InputError
from plastic.store.urls import URL_ENV

log = logging.getLogger(__name__)

AWS_RECOMMENDED_INTERVAL_S = 5.0


def _redis(url: str | None, ca_file: str | None = None):
    from redis import Redis

    from plastic.store import Store
    from plastic.store.urls import check_url, with_ca

    url = url or os.environ.get(URL_ENV)
    if not url:
        raise InputError(f"a Redis URL is needed (--redis or ${URL_ENV})", source="--redis")
    url = check_url(with_ca(url, ca_file))
    try:
        client = Redis.from_url(url, decode_responses=True, socket_timeout=5.0, socket_connect_timeout=2.0)
    except ValueError as exc:
        raise InputError(f"not a Redis URL: {url!r} ({exc})", source="--redis") from None
    return Store(client), client


def imds_url_value(text: str, source: str = "--imds") -> str:
    import httpx

    try:
        url = httpx.URL(text)
    except (httpx.InvalidURL, TypeError) as exc:
        raise InputError(f"not a URL: {text!r} ({exc})", source=source) from None
    if url.scheme not in ("http", "https") or not url.host:
        raise InputError(f"not an http(s)://HOST[:PORT] URL: {text!r}", source=source)
    return str(url).rstrip("/")


def setup_logging(verbose: int) -> None:
    level = logging.WARNING - 10 * min(verbose, 2)
    if not logging.getLogger().handlers:  # `python -m plastic.watch`: no `plastic` group configured it
        logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    if verbose:
        logging.getLogger("plastic").setLevel(level)
    if verbose < 2:  # a line per request every two seconds is for -vv only
        logging.getLogger("httpx").setLevel(logging.WARNING)


@click.command("agent-watch", context_settings={"help_option_names": ["-h", "--help"]},
               short_help="Publish this machine's spot notices (IMDS) into Redis.")
@redis_options(f"Redis of the plastic run or service, redis://[USER:PASSWORD@]HOST[:PORT]/DB or rediss://... for "
               f"TLS (default: ${URL_ENV}; one of the two is needed).")
@click.option("--imds", "imds", metavar=URL, default="http://169.254.169.254", show_default=True,
              help="The instance metadata service.")
@click.option("--interval", type=Seconds(min_open=True), default=2.0, show_default=True,
              help="Poll IMDS this often (AWS recommends at least every 5 s).")
@click.option("--agent-id", metavar="ID", help="This machine's Mesos agent id (default: notices name the EC2 "
                                               "instance id, from IMDS).")
@click.option("--grace", type=Seconds(), default=30.0, show_default=True,
              help="Exit this long after the interruption time.")
@click.option("--token-ttl", type=click.IntRange(min=1), metavar="SECONDS", default=21600, show_default=True,
              help="Lifetime asked for each IMDSv2 token (1..21600).")
@click.option("-v", "--verbose", count=True, help="More logging (-v info, -vv debug).")
def agent_watch(redis_url: str | None, redis_ca: str | None, imds: str, interval: float, agent_id: str | None,
                grace: float, token_ttl: int, verbose: int) -> None:
    """Watch this machine's IMDS for spot interruption notices and rebalance recommendations, and
    publish each once into plastic's Redis."""
    from plastic.watch.imds_client import MAX_TOKEN_TTL_S, ImdsClient
    from plastic.watch.watcher import AgentWatcher

    if token_ttl > MAX_TOKEN_TTL_S:
        raise InputError(f"must be at most {MAX_TOKEN_TTL_S} seconds, got {token_ttl}",
                         source="--token-ttl")
    if agent_id is not None and (not agent_id.strip() or any(c.isspace() for c in agent_id)):
        raise InputError(f"not an agent id: {agent_id!r}", source="--agent-id")
    imds_url = imds_url_value(imds)
    store, client = _redis(redis_url, redis_ca)
    setup_logging(verbose)
    if interval > AWS_RECOMMENDED_INTERVAL_S:
        log.warning("--interval %.1f s: AWS recommends polling at least every %.0f s (the warning is two minutes)",
                    interval, AWS_RECOMMENDED_INTERVAL_S)
    from redis.exceptions import RedisError

    from plastic.store.urls import redact

    try:
        client.ping()
    except RedisError as exc:  # it may come up later: notices are retried
        log.warning("Redis at %s is not reachable now (%s); notices will be retried",
                    redact(redis_url) if redis_url else "$" + URL_ENV, exc)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    client_imds = ImdsClient(imds_url, token_ttl_s=token_ttl)
    try:
        outcome = AgentWatcher(client_imds, store, agent_id=agent_id, interval_s=interval, grace_s=grace).run(stop)
        log.info("agent-watch: %s", outcome)
    finally:
        client_imds.close()
        client.close()
