"""Who may read a run's files: this user only, except the workflow's outputs.

`plastic run` and `plastic serve` start with `make_private` (umask 077): every directory and file
they and their children create (the run directory, plan.json, run.json, decisions.jsonl, toil.log,
redis/ with the embedded server's AOF and socket, watch/, workflow/, Toil's job store, the local
cluster's sandboxes) is 0700 / 0600.  These hold the run's inputs, its Redis state and its
commands; a umask covers the files Toil and redis-server write too, which no list of chmods would.

The workflow's outputs are the user's results: ``--outdir`` (when plastic creates it) and every
file and directory of outputs.json inside it get the modes the user's own umask gives, as if a
plain `cp` had made them (`share_outputs`), so a shared outdir stays as readable as before.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

PRIVATE_UMASK = 0o077

_user_umask: int | None = None  # the umask before make_private (None: plastic left it alone)


def make_private() -> int:
    """Set the process's umask to 077; returns the user's umask from before (the first call's)."""
    global _user_umask
    previous = os.umask(PRIVATE_UMASK)
    if _user_umask is None:
        _user_umask = previous
    return _user_umask


def private_dir(path: Path) -> Path:
    """``path`` made 0700 whatever the umask (missing parents as the umask makes them); a directory
    that exists already (``--run-dir`` given by the user) keeps its mode."""
    if not path.is_dir():
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.chmod(path, 0o700)
    return path


def shared_dir(path: Path) -> Path:
    """``path`` made with the modes the user's umask gives the directories it creates (the outdir)."""
    missing = []
    probe = path.absolute()
    while not probe.exists() and probe != probe.parent:
        missing.append(probe)
        probe = probe.parent
    path.mkdir(parents=True, exist_ok=True)
    if _user_umask is not None:
        for created in missing:
            os.chmod(created, 0o777 & ~_user_umask)
    return path


def share_outputs(outputs: Any, outdir: Path) -> None:
    """The files and directories of a CWL output object that are inside ``outdir``, given the modes
    the user's umask makes (executable bits kept); a no-op unless `make_private` ran."""
    if _user_umask is None:
        return
    root = outdir.resolve()
    for path in _paths(outputs):
        if path.is_relative_to(root):
            for item in _tree(path):
                _share(item, _user_umask)


def _paths(value: Any) -> Iterator[Path]:
    if isinstance(value, dict):
        if value.get("class") in ("File", "Directory"):
            where = value.get("path") or value.get("location") or ""
            if where.startswith("file://"):
                where = unquote(urlsplit(where).path)
            if where.startswith("/"):
                yield Path(os.path.realpath(where))
        for item in value.values():
            yield from _paths(item)
    elif isinstance(value, list):
        for item in value:
            yield from _paths(item)


def _tree(path: Path) -> Iterator[Path]:
    yield path
    if path.is_dir() and not path.is_symlink():
        for base, dirs, files in os.walk(path):
            for name in dirs + files:
                yield Path(base) / name


def _share(path: Path, umask: int) -> None:
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return
    if stat.S_ISLNK(mode):
        return
    wanted = 0o777 if stat.S_ISDIR(mode) or mode & stat.S_IXUSR else 0o666
    os.chmod(path, wanted & ~umask)
