"""`plastic sqs-watch` / `sqs-setup`: help, one-line errors (exit 2), a bounded run against moto.

AWS is moto, which only patches this process: the commands that talk to AWS run in-process
through plastic.cli.error_exit.run_command (the same wrapper `plastic` uses); --help runs as a
real process.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from plastic.aws.session import check_queue_url, region_from_queue_url
from plastic.cli.aws import aws_group
from plastic.cli.error_exit import run_command
from plastic.core.book.spot_events import INTERRUPTION_WARNING
from plastic.core.errors import InputError
from plastic.store import Store, start_embedded
from tests.aws.helpers import eb_event, queue_depth
from tests.clirun import REPO, assert_one_line_error
from tests.clirun import plastic as run_plastic

IID = "i-0aaaaaaaaaaaaaaa1"


def run_in_process(monkeypatch, capsys, *args: str) -> subprocess.CompletedProcess[str]:
    monkeypatch.setattr(sys, "argv", ["plastic", *args])
    with pytest.raises(SystemExit) as exited:
        run_command(aws_group)
        raise SystemExit(0)
    out, err = capsys.readouterr()
    code = exited.value.code
    return subprocess.CompletedProcess(args, code if isinstance(code, int) else 1, out, err)


@pytest.mark.parametrize("command", ["sqs-watch", "sqs-setup"])
def test_help(command):
    res = subprocess.run([sys.executable, "-m", "plastic.cli.aws", command, "--help"], capture_output=True,
                         text=True, cwd=REPO, timeout=60, check=False)
    assert res.returncode == 0, res.stderr
    assert "--region" in res.stdout and "Usage:" in res.stdout


def test_help_through_plastic():
    res = run_plastic("sqs-watch", "--help", timeout=60)
    assert res.returncode == 0 and "--queue-url" in res.stdout


def test_a_missing_queue_is_a_one_line_error(monkeypatch, capsys, sqs):
    url = "https://sqs.us-east-1.amazonaws.com/123456789012/no-such-queue"
    # --redis points nowhere: the queue is checked before Redis is touched
    res = run_in_process(monkeypatch, capsys, "sqs-watch", "--queue-url", url, "--redis", "redis://127.0.0.1:1")
    assert_one_line_error(res, "no such SQS queue", url)


def test_a_bad_queue_url_is_a_one_line_error(monkeypatch, capsys, aws):
    res = run_in_process(monkeypatch, capsys, "sqs-watch", "--queue-url", "my-queue")
    assert_one_line_error(res, "not an SQS queue URL", "--queue-url")


def test_a_bad_queue_name_is_a_one_line_error(monkeypatch, capsys, aws):
    res = run_in_process(monkeypatch, capsys, "sqs-setup", "--queue-name", "spot.fifo")
    assert_one_line_error(res, "invalid SQS queue name")


def test_setup_then_watch(monkeypatch, capsys, sqs, tmp_path):
    monkeypatch.setenv("PLASTIC_HOME", str(tmp_path / "home"))
    res = run_in_process(monkeypatch, capsys, "sqs-setup", "--queue-name", "plastic-cli")
    assert res.returncode == 0, res.stderr
    url = res.stdout.strip()
    assert url.endswith("/plastic-cli")

    server = start_embedded(tmp_path / "home" / "redis")  # the one the command finds through PLASTIC_HOME
    try:
        client = server.client()
        store = Store(client)
        store.upsert_agent("agent-1", attributes={"instance_id": IID})
        sqs.send_message(QueueUrl=url, MessageBody=eb_event(
            INTERRUPTION_WARNING, {"instance-id": IID, "instance-action": "terminate"}))
        sqs.send_message(QueueUrl=url, MessageBody="garbage")
        res = run_in_process(monkeypatch, capsys, "sqs-watch", "--queue-url", url, "--wait-seconds", "0",
                             "--max-rounds", "2")
        assert res.returncode == 0, res.stderr
        assert "notice terminate (terminate) agent:agent-1 instance " + IID in res.stdout
        assert "1 notice(s)" in res.stderr and "1 ignored" in res.stderr
        assert [(n.fields["kind"], n.fields["target"]) for n in store.read_notices()] == [
            ("terminate", "agent:agent-1")]
        assert queue_depth(sqs, url) == 0
        client.close()
    finally:
        server.stop()


@pytest.mark.parametrize("url, region", [
    ("https://sqs.us-east-1.amazonaws.com/123456789012/q", "us-east-1"),
    ("https://sqs.eu-west-3.amazonaws.com/123456789012/q", "eu-west-3"),
    ("https://sqs.cn-north-1.amazonaws.com.cn/123456789012/q", "cn-north-1"),
    ("https://us-gov-west-1.queue.amazonaws.com/123456789012/q", "us-gov-west-1"),
    ("https://queue.amazonaws.com/123456789012/q", "us-east-1"),
    ("http://localhost:9324/000000000000/q", None),
])
def test_region_from_queue_url(url, region):
    assert region_from_queue_url(url) == region
    assert check_queue_url(url) == url


@pytest.mark.parametrize("url", ["q", "sqs.us-east-1.amazonaws.com/1/q", "https://sqs.us-east-1.amazonaws.com/",
                                 "ftp://x/1/q"])
def test_check_queue_url_refuses_non_urls(url):
    with pytest.raises(InputError):
        check_queue_url(url)
