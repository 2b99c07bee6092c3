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
from tests.redis_servers import free_port
from tests.waiting import eventually
from tests.watch.helpers import Watcher, wait_notices

PLASTIC = [sys.executable, "-m", "plastic"]


@pytest.fixture
def imds():
    port = free_port()
    proc = subprocess.Popen([*PLASTIC, "imds", "serve", "--port", str(port), "--instance-id", "i-spot-test",
                             "--instance-type", "m5.large"], cwd=REPO, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    eventually(lambda: httpx.get(url + "/plastic/state", timeout=1).raise_for_status().status_code == 200, 30,
               "imds serve to come up", interval=0.1, alive=proc, ignoring=httpx.HTTPError)
    yield url
    proc.terminate()
    proc.wait(10)


def reads(url: str, path: str = "spot/instance-action") -> int:
    """How many times the emulator at ``url`` has been asked for meta-data ``path``."""
    return httpx.get(url + "/plastic/state", timeout=5).raise_for_status().json()["reads"].get(path, 0)


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


@pytest.mark.slow
def test_spot_run_kills_its_command_at_the_notice_time_and_agent_watch_publishes_it(imds, client, redis_server):
    pidfile = f"/tmp/plastic-spot-run-{os.getpid()}.pid"
    run = subprocess.Popen([*PLASTIC, "spot-run", "--imds", imds, "--interval", "0.2", "--", "sh", "-c",
                            f"echo $$ > {pidfile}; exec sleep 600"], cwd=REPO, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True)
    watch = Watcher("--redis", redis_server.url, "--imds", imds, "--interval", "0.2", "--grace", "0")
    try:
        watch.wait_for("watching this instance")
        child = int(eventually(lambda: os.path.exists(pidfile) and open(pidfile).read().strip(), 20,
                               "the command's pid in its file", alive=run))
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
    run = subprocess.Popen([*PLASTIC, "spot-run", "--imds", imds, "--", "sh", "-c",
                            "trap 'exit 3' TERM; echo ready; sleep 600 & wait"],
                           cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert run.stdout.readline() == "ready\n", run.stderr.read()  # the command's trap is in place
        # spot-run reads the notice only once it passes signals on
        eventually(lambda: reads(imds) >= 1, 20, "spot-run's first IMDS read", alive=run)
        run.send_signal(signal.SIGTERM)
        assert run.wait(20) == 3
    finally:
        if run.poll() is None:
            run.kill()
            run.wait(10)


def _zombie_or_gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def test_spot_run_restarts_a_crashed_agent_and_reaps_the_executors_it_left(imds, tmp_path):
    """The agent (here a shell) starts an "executor" in a session of its own and is SIGKILLed: spot-run
    starts the agent again, the executor keeps running as spot-run's child (its subreaper), and when
    the executor exits spot-run reaps it: no zombie left for a recovering agent to take for alive."""
    agents, executor = tmp_path / "agents", tmp_path / "executor"
    script = (f"echo $$ >> {agents}; if [ ! -s {executor} ]; then setsid sh -c 'echo $$ > {executor}; "
              f"exec sleep 600' & fi; exec sleep 600")
    run = subprocess.Popen([*PLASTIC, "spot-run", "--imds", imds, "--interval", "0.1", "--restart-seconds", "0.2",
                            "--", "sh", "-c", script], cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           text=True)

    def pids(path) -> list[int]:
        return [int(x) for x in path.read_text().split()] if path.exists() else []

    try:
        first = eventually(lambda: pids(agents) and pids(executor) and pids(agents)[0], 20, "the agent and its executor",
                           alive=run)
        (worker,) = pids(executor)
        os.kill(first, signal.SIGKILL)
        eventually(lambda: len(pids(agents)) == 2, 20, "spot-run to start the agent again", alive=run)
        assert not _zombie_or_gone(worker), "the executor went with its agent"
        with open(f"/proc/{worker}/stat") as f:
            assert int(f.read().rsplit(")", 1)[1].split()[1]) == run.pid  # spot-run adopted it
        os.kill(worker, signal.SIGTERM)
        eventually(lambda: not os.path.exists(f"/proc/{worker}"), 20, "spot-run to reap the executor", alive=run)
        run.send_signal(signal.SIGTERM)
        assert run.wait(20) == 128 + signal.SIGTERM  # a stop is not restarted
        assert "starting it again" in run.stderr.read()
    finally:
        if run.poll() is None:
            run.kill()
            run.wait(10)


@pytest.mark.parametrize(("args", "needles"), [
    (["spot-run", "--imds", "ftp://x", "--", "true"], ["--imds"]),
    (["spot-run", "--interval", "0", "--", "true"], ["--interval", "> 0"]),
    (["spot-run", "--restart-seconds", "soon", "--", "true"], ["--restart-seconds", "not a number"]),
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
