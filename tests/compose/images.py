"""The Mesos image by what it is built from: `make test-compose` builds plastic/mesos:1.11 once and tags
it `plastic/mesos:inputs-DIGEST` (DIGEST: its build files, the source tarball if there is one, the extra
CA certificates and the base image's id).  A later session whose inputs have that tag takes the image
as it is and builds only plastic's own images: a pruned layer cache (`docker image prune` drops the
compile stage) no longer means compiling Mesos again for 35-60 minutes."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

MESOS_IMAGE = "plastic/mesos:1.11"
MESOS_INPUTS = ("deploy/mesos", "deploy/extra-ca")
BASE_IMAGE = "debian:bookworm-slim"


def image_id(name: str) -> str:
    """The local image's id, or "" when there is none (or no Docker)."""
    try:
        res = subprocess.run(["docker", "image", "inspect", "--format", "{{.Id}}", name], capture_output=True,
                             text=True, timeout=60, check=False)
    except OSError:
        return ""
    return res.stdout.strip() if res.returncode == 0 else ""


def mesos_inputs_tag(repo: Path, base_id: str) -> str:
    digest = hashlib.sha256(base_id.encode())
    for root in MESOS_INPUTS:
        for path in sorted(p for p in (repo / root).rglob("*") if p.is_file()):
            digest.update(str(path.relative_to(repo)).encode() + b"\0")
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    return f"plastic/mesos:inputs-{digest.hexdigest()[:16]}"


def services_to_build(services: dict[str, dict], repo: Path) -> tuple[list[str], str]:
    """(the services `build` must build: [] for all of them, and the inputs tag to give the Mesos image
    after the build).  With an image of this tag here, it is tagged plastic/mesos:1.11 again and only the
    services of other images are built."""
    tag = mesos_inputs_tag(repo, image_id(BASE_IMAGE))
    if not image_id(tag):
        return [], tag
    subprocess.run(["docker", "tag", tag, MESOS_IMAGE], check=True, capture_output=True, timeout=60)
    return sorted(n for n, s in services.items() if "build" in s and s.get("image") != MESOS_IMAGE), tag
