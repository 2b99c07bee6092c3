"""Running `plastic` as a user would, for the CLI tests: a real process, exit code and stderr."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.waiting import eventually

REPO = Path(__file__).resolve().parents[1]


def plastic(*args: object, cwd: Path | None = None, timeout: float = 120,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`python -m plastic.cli ARGS` from the repository root (or `cwd`), with ``env`` added to the environment."""
    return subprocess.run([sys.executable, "-m", "plastic.cli", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd or REPO, timeout=timeout, check=False,
                          env=None if env is None else {**os.environ, **env})


def assert_one_line_error(res: subprocess.CompletedProcess[str], *needles: str) -> None:
    """Bad input: exit status 2, exactly one line on stderr holding every needle, no traceback."""
    assert res.returncode == 2, (res.returncode, res.stdout, res.stderr)
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, res.stderr
    assert "Traceback" not in res.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


def assert_replays(run_dir: Path, *, books: int = 1) -> Any:
    """The run's decisions log, replayed through fresh JobBooks and, for an elastic run, each leader's
    elastic controller (plastic.core.elastic.replay), gives the same commands and records (the last step
    of a killed leader may be torn).  Returns the replay's result (FullReplayResult)."""
    from plastic.core.elastic.replay import replay_all

    entries = read_decisions(run_dir)
    result = replay_all(entries)
    assert result.book.books == books and result.book.events > 0, result
    assert not result.mismatches, result.mismatches[0]
    elastic = result.elastic
    if any(e.get("m") == "elastic" for e in entries):  # an elastic run: its controllers' every step replayed
        assert 1 <= elastic.starts <= books and elastic.looks > 0 and not elastic.skipped, elastic
    return result


def read_decisions(run_dir: Path) -> list[dict[str, Any]]:
    """A run's decisions.jsonl (one JSON object a line).  A line that does not parse is skipped: the
    last one may still be being written, and a run killed with SIGKILL may leave a torn line before
    those its resume appends."""
    try:
        text = (run_dir / "decisions.jsonl").read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    out = []
    for line in text.splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out



SLOW_SCATTER = REPO / "tests" / "watch" / "data" / "slow-scatter"
JOINED = "item 1\nitem 2\nitem 3\n"  # the slow scatter's output


class SlowScatterRun:
    """`plastic run` of the slow scatter (3 x `sleep SECONDS`, then a gather) in the background, for the
    tests that break something under a run: start it, wait for a point, break, then `finish()`."""

    def __init__(self, tmp_path: Path, *extra: str, seconds: int = 12):
        import os

        self.tmp_path, self.run_dir, self.out = tmp_path, tmp_path / "run", tmp_path / "out"
        job = tmp_path / "job.yml"
        job.write_text(f"items: [1, 2, 3]\nseconds: {seconds}\n")
        env = {k: v for k, v in os.environ.items() if k != "PLASTIC_REDIS_URL"}
        cmd = [sys.executable, "-m", "plastic", "run", str(SLOW_SCATTER / "slow-scatter.cwl"), str(job),
               "--outdir", str(self.out), "--run-dir", str(self.run_dir), "--quiet", *extra]
        with open(tmp_path / "run.log", "wb") as log:
            self.proc = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=log, stderr=log)

    def wait_for(self, pred, what: str, timeout_s: float = 90) -> None:
        """Until ``pred()``; the run must go on meanwhile (its log's tail tells the story otherwise)."""
        eventually(pred, timeout_s, what, interval=0.2, alive=self.proc, describe=self.log)

    def wait_running(self, tasks: int = 1) -> None:
        self.wait_for(lambda: sum(d["kind"] == "running" for d in read_decisions(self.run_dir)) >= tasks,
                      f"{tasks} running task(s)")

    def log(self) -> str:
        return self.full_log()[-3000:]

    def full_log(self) -> str:
        """What `plastic run` has written so far."""
        return (self.tmp_path / "run.log").read_text(errors="replace")

    def finish(self, timeout_s: float = 240) -> str:
        """Wait for the run's end (killed after ``timeout_s``); it must have succeeded with the right
        output.  Returns what it printed."""
        try:
            rc = self.proc.wait(timeout_s)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait(10)
        toil_log = self.run_dir / "toil.log"
        assert rc == 0, self.log() + (toil_log.read_text()[-3000:] if toil_log.exists() else "")
        assert (self.out / "joined.txt").read_text() == JOINED
        return (self.tmp_path / "run.log").read_text(errors="replace")
