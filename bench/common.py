"""Small pieces the benchmarks share: where their input traces are, the machine line they print and a
nearest-rank percentile."""

from __future__ import annotations

import json
import math
import os
import platform
import sys
from pathlib import Path

# the real WfCommons traces the benchmarks replay, kept in the repository (data/wfinstances/README.md)
WFINSTANCES = Path(__file__).resolve().parents[1] / "data" / "wfinstances"


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "?"


def machine() -> str:
    """Cores this process may use, CPU model, Python and OS: the line recorded next to the figures."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"{cores} cores ({cpu_model()}), Python {platform.python_version()}, {platform.system()} {platform.release()}"


def plastic_env() -> dict[str, str]:
    """The environment of a `plastic` or Toil process a bench starts: this one's, without a Redis URL (so a
    run starts its own embedded Redis) and with this interpreter's tools first on PATH."""
    from plastic.store.urls import URL_ENV

    env = {k: v for k, v in os.environ.items() if k != URL_ENV}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def percentile(values: list[float], q: float) -> float:
    """Nearest rank (the value at or below which q% of the sample lies); nan for no values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, math.ceil(q / 100 * len(ordered)) - 1))]


def decisions(run_dir: Path) -> list[dict]:
    """A run's decisions.jsonl; a line that does not parse (torn by a SIGKILL, or being written) is skipped."""
    try:
        lines = (run_dir / "decisions.jsonl").read_text().splitlines()
    except OSError:
        return []
    out = []
    for line in lines:
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out
