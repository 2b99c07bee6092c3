"""What `plastic submit` ships to a `plastic serve` on another machine (an EC2 control plane): the
workflow, its job order and the local files the job order names, carried in Redis with the submission.

A service on this machine reads the user's paths as they are.  One on another machine cannot: there
`plastic submit` packs the workflow into one document (cwltool's packing, every `run:` inlined), reads
each local File of the job order (``path`` or ``file://`` ``location``, relative to the job file), and
rewrites the job order to name them ``inputs/N-BASENAME`` beside it; the service writes the three into
the run's directory (``submitted/``) and runs them from there, and Toil imports the inputs into the job
store.  Inputs at a URL (``s3://``, ``https://``) go as they are: Toil fetches them.  A shipment holds at
most MAX_BYTES: larger inputs belong in S3 (give their ``s3://`` locations).  A Directory input, or a
File the workflow names as a default, is not shipped (InputError naming it / left as written).
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from plastic.core.errors import InputError

MAX_BYTES = 64 * 1024 * 1024
WORKFLOW = "workflow.cwl"
JOB = "job.json"
INPUTS = "inputs"
SUBMITTED = "submitted"  # in the run directory, on the service's machine


@dataclass(frozen=True)
class Shipment:
    files: Mapping[str, bytes]  # WORKFLOW, JOB (when there is one), inputs/N-NAME

    @property
    def size(self) -> int:
        return sum(len(data) for data in self.files.values())


def is_local_redis(url: str | None) -> bool:
    """A Redis on this machine (a Unix socket, a loopback address, none given: the embedded one), whose
    service reads the user's paths as they are."""
    if not url:
        return True
    parts = urlsplit(url)
    if parts.scheme == "unix":
        return True
    host = (parts.hostname or "").lower()
    if host in ("", "localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def make_shipment(workflow: Path, job: Path | None) -> Shipment:
    from plastic.cwl.lower_io import pack, to_json_text

    files: dict[str, bytes] = {WORKFLOW: to_json_text(pack(str(workflow))).encode()}
    if job is not None:
        order = _read_job(job)
        inputs: dict[str, bytes] = {}
        order = _ship_files(order, job.resolve().parent, inputs, str(job))
        files[JOB] = json.dumps(order, indent=2).encode()
        files.update(inputs)
    shipment = Shipment(files)
    if shipment.size > MAX_BYTES:
        raise InputError(f"the workflow and its local inputs are {shipment.size / 2**20:.0f} MiB, over the "
                         f"{MAX_BYTES // 2**20} MiB a submission carries: put the large inputs in S3 and give "
                         f"their s3:// locations", source=str(job or workflow))
    return shipment


def _read_job(job: Path) -> Any:
    import yaml

    try:
        return yaml.safe_load(job.read_text(encoding="utf-8")) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as error:
        raise InputError(f"cannot read the job order ({' '.join(str(error).split())})", source=str(job)) from None


def _ship_files(value: Any, base: Path, inputs: dict[str, bytes], source: str) -> Any:
    """``value`` with each local File read into ``inputs`` and named there instead."""
    if isinstance(value, list):
        return [_ship_files(v, base, inputs, source) for v in value]
    if not isinstance(value, dict):
        return value
    if value.get("class") == "Directory" and _local_path(value, base) is not None:
        raise InputError("a local Directory input is not shipped to a remote service: put it in S3 and give its "
                         "s3:// location", source=source, field=str(value.get("location") or value.get("path")))
    out = {k: _ship_files(v, base, inputs, source) for k, v in value.items()}
    if value.get("class") != "File":
        return out
    path = _local_path(value, base)
    if path is None:
        return out  # a URL, or contents only: as it is
    try:
        data = path.read_bytes()
    except OSError as error:
        raise InputError(f"cannot read an input file ({error.strerror or error})", source=source,
                         field=str(path)) from None
    name = f"{INPUTS}/{len(inputs)}-{path.name}"
    inputs[name] = data
    out.pop("path", None)
    out["location"] = name
    return out


def _local_path(value: Mapping[str, Any], base: Path) -> Path | None:
    where = value.get("location") or value.get("path")
    if not isinstance(where, str) or not where:
        return None
    parts = urlsplit(where)
    if parts.scheme == "file":
        return Path(unquote(parts.path))
    if parts.scheme and len(parts.scheme) > 1:  # s3://, https://, ... (a one-letter scheme is a drive)
        return None
    return (base / where).resolve()


def unpack(files: Mapping[str, bytes], run_dir: Path) -> tuple[Path, Path | None]:
    """The shipped files written under run_dir/submitted/; returns (workflow, job order)."""
    where = run_dir / SUBMITTED
    for name, data in files.items():
        target = (where / name).resolve()
        if not target.is_relative_to(where.resolve()):  # a name of ours never climbs out
            raise InputError("a shipped file's name leaves its directory", source=name)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return where / WORKFLOW, (where / JOB) if JOB in files else None
