"""Running `plastic` as a user would, for the CLI tests: a real process, exit code and stderr."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def plastic(*args: object, cwd: Path | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """`python -m plastic.cli ARGS` from the repository root (or `cwd`)."""
    return subprocess.run([sys.executable, "-m", "plastic.cli", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd or REPO, timeout=timeout, check=False)


def assert_one_line_error(res: subprocess.CompletedProcess[str], *needles: str) -> None:
    """Bad input: exit status 2, exactly one line on stderr holding every needle, no traceback."""
    assert res.returncode == 2, (res.returncode, res.stdout, res.stderr)
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, res.stderr
    assert "Traceback" not in res.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


def assert_replays(run_dir: Path, *, books: int = 1) -> None:
    """The run's decisions log, replayed through fresh JobBooks (plastic.core.replay), gives the same
    commands and records (the last step of a killed leader may be torn)."""
    from plastic.core.replay import replay

    result = replay(read_decisions(run_dir))
    assert result.books == books and result.events > 0, result
    assert not result.mismatches, result.mismatches[0]


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

