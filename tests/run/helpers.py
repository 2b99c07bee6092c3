"""`plastic run` of an example of cwl-examples as a user types it, and its outputs checked against the
example's expected-output.json: for the end-to-end tests of tests/run and tests/report."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.clirun import REPO

EXAMPLES = REPO / "cwl-examples"
TIMEOUT_S = 240
# The scatter-gather example, and its input in two parts: 5 Toil jobs where the example's job.yml makes
# 25 (about a third of the CPU on two cores), the same sorted output, a spot node in the plan (so the
# run starts spot-notice watchers too).  For the tests whose point is how a run is set up (Redis
# credentials, TLS, Mesos authentication, file modes, where its files go), not how wide it is.
SG = EXAMPLES / "scatter-gather"
SG_TWO_PARTS = REPO / "tests" / "run" / "data" / "scatter-gather-two-parts.yml"


def plastic_run(tmp_path: Path, example: str, *extra: str, env: dict | None = None,
                job: Path | None = None, examples: Path = EXAMPLES) -> subprocess.CompletedProcess:
    """`plastic run` of ``examples/EXAMPLE/EXAMPLE.cwl`` (its job.yml unless ``job``) into TMP_PATH/out, run,
    report.json; without the caller's PLASTIC_REDIS_URL, with ``env`` added."""
    wf = examples / example / f"{example}.cwl"
    job = job or examples / example / "job.yml"
    cmd = [sys.executable, "-m", "plastic", "run", str(wf), str(job), "--outdir", str(tmp_path / "out"),
           "--run-dir", str(tmp_path / "run"), "--report", str(tmp_path / "report.json"), *extra]
    full_env = dict(os.environ)
    full_env.pop("PLASTIC_REDIS_URL", None)
    full_env.update(env or {})
    return subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, timeout=TIMEOUT_S, env=full_env,
                          check=False)


def check_outputs(res: subprocess.CompletedProcess, tmp_path: Path, example: str) -> dict:
    """The run succeeded and its outputs are the example's expected ones; returns them."""
    assert res.returncode == 0, res.stderr[-5000:]
    expected = json.loads((EXAMPLES / example / "expected-output.json").read_text())
    outputs = json.loads(res.stdout)
    for name, want in expected.items():
        got = outputs[name]
        assert got["checksum"] == want["checksum"], (name, got)
        assert got["size"] == want["size"]
        assert (tmp_path / "out" / want["basename"]).stat().st_size == want["size"]
    return outputs
