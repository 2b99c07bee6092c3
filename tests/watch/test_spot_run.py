"""`plastic imds serve|interrupt` and `plastic spot-run`, the spot machine outside the local cluster
(each compose spot agent runs them): real processes, a real Redis for agent-watch."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import httpx
import pytest

from plastic.store import Store
from tests.clirun import REPO, assert_one_line_error
from tests.watch.test_agent_watch import Watcher, _closed_port, wait_notices

PLASTIC = [sys.executable, "-m", "plastic"]


@pytest.fixture
def imds():
    port = _closed_port()
    proc = subprocess.Popen([*PLASTIC, "imds", "serve", "--port", str(port), "--instance-id", "i-spot-test",
                             "--instance-type", "m5.large"], cwd=REPO, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            httpx.get(url + "/plastic/state", timeout=1).raise_for_status()
            break
        except httpx.HTTPError:
            assert proc.poll() is None, proc.stderr.read()
            assert time.monotonic() < deadline, "imds serve did not come up"
            time.sleep(0.1)
    yield url
    proc.terminate()
    proc.wait(10)


def interrupt(url: str, *args: str) -> dict:
    res = subprocess.run([*PLASTIC, "imds", "interrupt", url, *args], capture_output=True, text=True, cwd=REPO,
                         timeout=60, check=True)
    return json.loads(res.stdout)


def test_the_emulator_speaks_imdsv2_and_schedules_an_interruption(imds):
    with httpx.Client(base_url=imds, timeout=5) as http:
        assert http.get("/latest/meta-data/instance-id").status_code == 401  # IMDSv2: a token first
        token = http.put("/latest/api/token", headers={"X-aws-ec2-metadata-token-ttl-seconds": "60"}).text
        auth = {"X-aws-ec2-metadata-token": token}
        assert http.get("/latest/meta-data/instance-id", headers=auth).text == "i-spot-test"
        assert http.get("/latest/meta-data/spot/instance-action", headers=auth).status_code == 404
        before = time.time()
        state = interrupt(imds, "--notice-seconds", "90")
        assert state["instance_id"] == "i-spot-test" and before + 89 <= state["action_time"] <= time.time() + 91
        action = http.get("/latest/meta-data/spot/instance-action", headers=auth).json()
        assert action["action"] == "terminate"
        assert http.get("/latest/meta-data/events/recommendations/rebalance", headers=auth).status_code == 200
        assert interrupt(imds, "--notice-seconds", "5")["action_time"] == state["action_time"]  # the first stands


def test_spot_run_kills_its_command_at_the_notice_time_and_agent_watch_publishes_it(imds, client, redis_server):
    pidfile = f"/tmp/plastic-spot-run-{os.getpid()}.pid"
    run = subprocess.Popen([*PLASTIC, "spot-run", "--imds", imds, "--interval", "0.2", "--", "sh", "-c",
                            f"echo $$ > {pidfile}; exec sleep 600"], cwd=REPO, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True)
    watch = Watcher("--redis", redis_server.url, "--imds", imds, "--interval", "0.2", "--grace", "0")
    try:
        watch.wait_for("watching this instance")
        deadline = time.monotonic() + 20
        while not os.path.exists(pidfile) or not open(pidfile).read().strip():
            assert time.monotonic() < deadline and run.poll() is None
            time.sleep(0.05)
        child = int(open(pidfile).read())
        t0 = time.time()
        interrupt(imds, "--notice-seconds", "2")
        (notice,) = wait_notices(Store(client), "instance:i-spot-test", "terminate", timeout=5.0)
        assert notice.fields["instance_id"] == "i-spot-test"
        assert run.wait(20) == 137, run.stderr.read()
        assert time.time() - t0 >= 1.9  # not before the notice time
        with pytest.raises(ProcessLookupError):
            os.kill(child, 0)  # the machine's processes went with it
        assert "the machine goes now" in run.stderr.read()
    finally:
        if run.poll() is None:
            run.kill()
        watch.stop()
        if os.path.exists(pidfile):
            os.unlink(pidfile)


def test_spot_run_passes_sigterm_on_and_ends_with_the_commands_code(imds):
    run = subprocess.Popen([*PLASTIC, "spot-run", "--imds", imds, "--", "sh", "-c", "trap 'exit 3' TERM; sleep 600 & wait"],
                           cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    time.sleep(1.5)
    run.send_signal(signal.SIGTERM)
    assert run.wait(20) == 3


@pytest.mark.parametrize(("args", "needles"), [
    (["spot-run", "--imds", "ftp://x", "--", "true"], ["--imds"]),
    (["spot-run", "--interval", "0", "--", "true"], ["--interval", "> 0"]),
    (["spot-run", "--", "no-such-command-here"], ["COMMAND", "no such command"]),
    (["imds", "interrupt", "http://127.0.0.1:9"], ["URL", "no answer"]),
    (["imds", "interrupt", "http://127.0.0.1:9", "--notice-seconds", "-1"], ["--notice-seconds", ">= 0"]),
    (["imds", "serve", "--port", "8", "--instance-id", " "], ["--instance-id"]),
])
def test_bad_input_is_one_line_and_exit_2(args, needles):
    res = subprocess.run([*PLASTIC, *args], capture_output=True, text=True, cwd=REPO, timeout=60, check=False)
    assert_one_line_error(res, *needles)


def test_a_port_in_use_is_one_line_and_exit_2():
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        res = subprocess.run([*PLASTIC, "imds", "serve", "--port", str(busy.getsockname()[1]), "--instance-id", "i-x"],
                             capture_output=True, text=True, cwd=REPO, timeout=60, check=False)
    assert_one_line_error(res, "--port", "cannot listen")
