"""`plastic sqs-watch | sqs-setup`: spot notices from EventBridge through SQS into Redis.

boto3 is imported inside the commands, so `plastic --help` stays fast.  Run as a module
(``python -m plastic.cli.aws sqs-watch ...``) the commands work without plastic.cli.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Mapping
from typing import Any

import click

from plastic.cli.options import URL
from plastic.cli.redis_opts import redis_options
from plastic.cli.redis_opts import redis_url as checked_url

log = logging.getLogger(__name__)


def _region(region: str | None, queue_url: str | None = None) -> str | None:
    """``--region``, else the region the queue URL names, else None (boto3's default chain)."""
    from plastic.aws.session import region_from_queue_url

    return region or (region_from_queue_url(queue_url) if queue_url else None)


def _notice_line(kind: str, target: str, fields: Mapping[str, Any]) -> str:
    at = fields.get("terminate_at")
    when = f" terminate at {time.strftime('%H:%M:%S', time.gmtime(float(at)))}Z" if at is not None else ""
    action = f" ({fields['action']})" if fields.get("action") else ""
    return f"notice {kind}{action} {target} instance {fields.get('instance_id')}{when}"


@click.command("sqs-watch", short_help="Publish EC2 spot events from SQS as notices in Redis.")
@click.option("--queue-url", metavar=URL, required=True, help="The SQS queue EventBridge sends EC2 spot events to "
                                                 "(see plastic sqs-setup).")
@click.option("--region", help="AWS region (default: the one in the queue URL, else AWS_REGION / the AWS config).")
@redis_options("Redis URL (default: $PLASTIC_REDIS_URL, else the embedded server of $PLASTIC_HOME, "
               "default ~/.local/state/plastic), the same as plastic serve.")
@click.option("--wait-seconds", type=click.IntRange(0, 20), metavar="SECONDS", default=20, show_default=True,
              help="SQS long-poll wait per receive.")
@click.option("--max-rounds", type=click.IntRange(min=1), hidden=True, help="Stop after this many receives (tests).")
def sqs_watch(queue_url: str, region: str | None, redis_url: str | None, redis_ca: str | None, wait_seconds: int,
              max_rounds: int | None) -> None:
    """Publish EC2 spot events from an SQS queue as notices in Redis, until interrupted.

    Interruption warnings, rebalance recommendations and instances going away become notices
    (terminate / rebalance / state) for the Mesos agent on that instance, once each."""
    from plastic.aws.session import check_queue_url, clients
    from plastic.aws.sqs_notices import SqsNoticePoller, check_queue
    from plastic.service.home import service_redis
    from plastic.store import Store
    from plastic.store.urls import redact

    redis_url = checked_url(redis_url, redis_ca)
    check_queue_url(queue_url)
    sqs, ec2, _ = clients(_region(region, queue_url), read_timeout_s=wait_seconds + 40)
    # The queue first: a wrong URL fails in one line before any Redis is started.
    queue_arn = check_queue(sqs, queue_url)
    conn = service_redis(redis_url)
    stop = threading.Event()

    def on_signal(signum: int, frame: object) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        click.echo(f"plastic sqs-watch: stopping after the current receive (up to {wait_seconds} s)", err=True)
        stop.set()

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        poller = SqsNoticePoller(Store(conn.client), queue_url, sqs=sqs, ec2=ec2, wait_seconds=wait_seconds,
                                 on_notice=lambda k, t, f: click.echo(_notice_line(k, t, f)))
        click.echo(f"plastic sqs-watch: {queue_arn or queue_url} -> notices in Redis {redact(conn.url)}", err=True)
        totals = poller.run(max_rounds=max_rounds, stop=stop)
        click.echo(f"plastic sqs-watch: {totals.received} message(s), {totals.published} notice(s), "
                   f"{totals.duplicates} duplicate(s), {totals.ignored} ignored", err=True)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        conn.close()


@click.command("sqs-setup", short_help="Create the EventBridge rule and SQS queue sqs-watch reads.")
@click.option("--queue-name", required=True, help="SQS queue to create or reuse (standard, not FIFO).")
@click.option("--rule-name", default="plastic-spot-events", show_default=True, help="EventBridge rule name.")
@click.option("--region", help="AWS region (default: AWS_REGION / the AWS config).")
def sqs_setup(queue_name: str, rule_name: str, region: str | None) -> None:
    """Create (or repair) the EventBridge rule and SQS queue that plastic sqs-watch reads; prints the URL."""
    from plastic.aws.eventbridge import setup_spot_events
    from plastic.aws.session import clients

    sqs, _, events = clients(_region(region))
    done = setup_spot_events(queue_name, sqs=sqs, events=events, rule_name=rule_name)
    click.echo(f"plastic sqs-setup: rule {done.rule_arn} -> {'new' if done.created_queue else 'existing'} "
               f"queue {done.queue_arn}", err=True)
    click.echo(done.queue_url)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("-v", "--verbose", count=True, help="More logging (-v info, -vv debug).")
def aws_group(verbose: int) -> None:
    """plastic's AWS commands (also registered in `plastic` itself)."""
    import sys

    logging.basicConfig(level=logging.WARNING - 10 * min(verbose, 2),
                        format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)


aws_group.add_command(sqs_watch)
aws_group.add_command(sqs_setup)


if __name__ == "__main__":
    from plastic.cli.error_exit import run_command

    run_command(aws_group)
