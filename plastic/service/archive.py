"""A served run's directory kept in Redis once the run has ended, for the user's machine to read.

On an EC2 control plane the run directories are on its disk, which the user's machine cannot reach; its
Redis it can.  So when a run of `plastic serve` ends, the service packs the run's directory (the plan,
run.json, the decisions log, the report, the outputs' JSON, the logs; not the job store, Toil's
temporary files or the shipped inputs) into one gzipped tar in Redis, at most MAX_BYTES (larger: the
logs are left out, and a note in the archive says so).  `plastic report RUN_ID` reads it when the run's
directory is not on this machine, and `plastic cloud down --save-to DIR` writes every run's into
DIR/runs/RUN_ID/.
"""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

from plastic.core.errors import InputError

MAX_BYTES = 32 * 1024 * 1024
LEFT_OUT = frozenset({"jobstore", "toil-tmp", "redis"})  # directories of the run's that stay behind
LOGS = frozenset({"toil.log", "plastic-run.log"})
NOTE = "ARCHIVE-NOTE.txt"


def pack_run_dir(run_dir: Path) -> bytes:
    """The run directory as a gzipped tar (paths relative to it), within MAX_BYTES."""
    data = _pack(run_dir, with_logs=True)
    if len(data) <= MAX_BYTES:
        return data
    return _pack(run_dir, with_logs=False, note=f"the logs ({', '.join(sorted(LOGS))}) were left out: the "
                                                f"archive was {len(data) / 2**20:.0f} MiB, over {MAX_BYTES // 2**20} MiB")


def _pack(run_dir: Path, *, with_logs: bool, note: str | None = None) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for path in sorted(run_dir.rglob("*")):
            rel = path.relative_to(run_dir)
            if rel.parts[0] in LEFT_OUT or rel.parts[:2] == ("submitted", "inputs") or path.is_symlink():
                continue
            if path.is_file() and (with_logs or rel.name not in LOGS):
                tar.add(path, arcname=str(rel), recursive=False)
        if note:
            info = tarfile.TarInfo(NOTE)
            text = (note + "\n").encode()
            info.size = len(text)
            tar.addfile(info, io.BytesIO(text))
    return out.getvalue()


def unpack_run_dir(data: bytes, into: Path) -> Path:
    """The archive written into ``into`` (made 0700); a member that would leave it is refused."""
    into.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
            tar.extractall(into, filter="data")  # the data filter refuses absolute paths, '..' and links out
    except (tarfile.TarError, OSError, EOFError) as error:
        raise InputError(f"the run's archive cannot be read ({error})", source=str(into)) from None
    return into
