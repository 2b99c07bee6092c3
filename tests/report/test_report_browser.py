"""`plastic report RUN --html` on a real run, opened in a real browser: a `plastic run` of the
scatter-gather example with spot interruptions, its page rendered by headless Chromium to a PNG and
to the DOM the browser built, which must show the page's script ran without an error and one
attempt bar per placed Mesos task of the decisions log."""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from plastic.report.svg import fmt_usd
from tests.clirun import plastic, read_decisions
from tests.run.helpers import check_outputs, plastic_run

pytestmark = pytest.mark.toil_e2e

BROWSER_TIMEOUT_S = 60


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    pytest.skip("no headless browser: install Debian's chromium (apt-get install chromium)")


def browse(page: Path, profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Chromium, headless, on ``page`` (as root it needs --no-sandbox); console messages go to stderr."""
    cmd = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", f"--user-data-dir={profile}",
           "--enable-logging=stderr", "--v=0", *args, page.resolve().as_uri()]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=BROWSER_TIMEOUT_S, check=False)
    assert res.returncode == 0, res.stderr[-3000:]
    return res


def console_lines(stderr: str) -> list[str]:
    """What the page wrote to the console: script errors, blocked loads (Chromium logs them as CONSOLE)."""
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR", data[:16]
    return struct.unpack(">II", data[16:24])


def test_the_console_check_sees_a_script_error(tmp_path):
    """The check below can fail: a page with a script error and a blocked fetch is caught."""
    page = tmp_path / "bad.html"
    page.write_text("<!doctype html><html><head><meta http-equiv=\"Content-Security-Policy\" "
                    "content=\"default-src 'none'; script-src 'unsafe-inline'\"></head><body>"
                    "<img src=\"https://example.invalid/x.png\"><script>no_such_function();</script></body></html>")
    lines = console_lines(browse(page, tmp_path / "profile", "--dump-dom").stderr)
    assert any("Uncaught ReferenceError" in line for line in lines), lines
    assert any("Content Security Policy" in line for line in lines), lines


def test_report_of_a_real_run_in_headless_chromium(tmp_path):
    chromium()  # skip before the run when there is no browser
    res = plastic_run(tmp_path, "scatter-gather", "--quiet", "--interrupt-rate", "3", "--seed", "11")
    check_outputs(res, tmp_path, "scatter-gather")
    run_dir = tmp_path / "run"
    page = tmp_path / "report.html"
    made = plastic("report", run_dir, "--html", page)
    assert made.returncode == 0, made.stderr
    decisions = read_decisions(run_dir)
    placed = [d["task"] for d in decisions if d["kind"] == "placed"]
    report = json.loads((run_dir / "report.json").read_text())
    assert placed and len(placed) == report["attempts"]

    dom = browse(page, tmp_path / "profile", "--dump-dom")
    assert console_lines(dom.stderr) == []  # no script error, nothing blocked
    body = re.search(r"<body[^>]*>", dom.stdout).group(0)
    assert f'data-rendered="{len(placed)}"' in body, body  # the page's script ran to its end
    bars = re.findall(r'<rect class="attempt" data-task="([^"]*)"[^>]*data-outcome="(\w+)"', dom.stdout)
    assert sorted(task for task, _ in bars) == sorted(placed)
    preempted = [d for d in decisions if d["kind"] == "requeue" and d["counted_as"] == "preempted"]
    assert sum(1 for _, outcome in bars if outcome == "preempted") == len(preempted)
    notices = [d for d in decisions if d["kind"] == "notice" and d.get("notice_kind") == "terminate"]
    assert dom.stdout.count('<g class="mark" data-kind="notice">') == len(notices)
    agents = {d["agent_id"] for d in decisions if d["kind"] == "agent"}
    assert dom.stdout.count('<g class="lane"') == len(agents)
    assert fmt_usd(report["cost_usd"]) in dom.stdout  # the headline cost is the run's own report's

    shot = tmp_path / "report.png"
    shown = browse(page, tmp_path / "profile", f"--screenshot={shot}", "--window-size=1400,1000")
    assert console_lines(shown.stderr) == []
    assert png_size(shot) == (1400, 1000)
    assert shot.stat().st_size > 30_000  # a drawn page, not a blank one
