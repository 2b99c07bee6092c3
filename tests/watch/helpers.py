"""A running `plastic agent-watch` (python -m plastic.watch) for the tests of tests/watch, and the notices it
published into Redis."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading

from plastic.store import Store
from tests.clirun import REPO
from tests.waiting import eventually

IMDS_READ = "spot/instance-action"  # read once a poll while no terminate notice is in


class Watcher:
    """A running watcher process; its stderr collected by a thread.  It logs at -vv (debug): a line per
    IMDS request (httpx) and per failed retry, so a test can see how many times it has polled."""

    def __init__(self, *args: str):
        self.proc = subprocess.Popen([sys.executable, "-m", "plastic.watch", "-vv", *args], cwd=REPO,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.lines: list[str] = []
        self._reader = threading.Thread(target=lambda: self.lines.extend(self.proc.stderr), daemon=True)
        self._reader.start()

    def count(self, needle: str) -> int:
        """The lines written so far that hold ``needle``."""
        return sum(needle in line for line in list(self.lines))

    def polls(self) -> int:
        """The IMDS reads of spot/instance-action answered so far (one a poll)."""
        return sum("HTTP Request: GET" in line and IMDS_READ in line for line in list(self.lines))

    def wait_for(self, needle: str, timeout: float = 20.0, times: int = 1) -> None:
        """Until ``needle`` has been written on ``times`` lines; the watcher must keep running meanwhile."""
        eventually(lambda: self.count(needle) >= times, timeout, f"{times} line(s) with {needle!r} from the watcher",
                   alive=self.proc, describe=self.text)

    def wait_polls(self, n: int, timeout: float = 20.0) -> None:
        """Until the watcher has read spot/instance-action ``n`` times in all."""
        eventually(lambda: self.polls() >= n, timeout, f"{n} IMDS polls by the watcher", alive=self.proc,
                   describe=self.text)

    def stop(self, timeout: float = 10.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(timeout)
        self._reader.join(5)
        return rc

    def text(self) -> str:
        return "".join(self.lines)


def notices(store: Store, target: str) -> list:
    return [n for n in store.read_notices() if n.fields.get("target") == target]


def wait_notices(store: Store, target: str, kind: str, timeout: float, describe=None) -> list:
    """The notices of ``kind`` for ``target``, once there is one (within ``timeout`` s)."""
    return eventually(lambda: [n for n in notices(store, target) if n.fields["kind"] == kind], timeout,
                      f"a {kind} notice for {target}", describe=describe)
