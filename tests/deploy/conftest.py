"""The compose specification's JSON schema, as the docker-compose Python package ships it: from an
installed docker-compose (Debian's python3-compose, or pip's), else from its wheel on the package
index, downloaded once into .venv/compose-spec/."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.clirun import REPO

WHEEL = "docker-compose==1.29.2"
IN_PACKAGE = "compose/config/compose_spec.json"


def _installed() -> Path | None:
    for base in [*sys.path, "/usr/lib/python3/dist-packages"]:
        path = Path(base or ".") / IN_PACKAGE
        if path.is_file():
            return path
    return None


@pytest.fixture(scope="session")
def compose_schema() -> dict:
    path = _installed()
    if path is not None:
        return json.loads(path.read_text())
    cache = REPO / ".venv" / "compose-spec"
    wheels = sorted(cache.glob("docker_compose-*.whl"))
    if not wheels:
        res = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(cache), WHEEL],
                             capture_output=True, text=True, timeout=300, check=False)
        wheels = sorted(cache.glob("docker_compose-*.whl"))
        if not wheels:
            pytest.fail(f"the compose schema: no docker-compose installed and `pip download {WHEEL}` failed: "
                        f"{res.stderr.strip()[-500:]}")
    with zipfile.ZipFile(wheels[-1]) as wheel:
        return json.loads(wheel.read(IN_PACKAGE))
