"""Writing output files whole or not at all."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from plastic.core.errors import InputError


def current_umask() -> int:
    """The process's umask (read by setting it and back: the only way POSIX offers)."""
    mask = os.umask(0o077)
    os.umask(mask)
    return mask


def write_atomically(path: str, text: str) -> None:
    """Write to a temporary file beside `path`, then rename: never a half-written file.  The file gets
    the mode the umask gives a new file (0644 under 022; 0600 in a run directory, under 077)."""
    target = Path(path)
    directory = target.parent if str(target.parent) else Path(".")
    if not directory.is_dir():
        raise InputError("directory does not exist", source=str(path), field="-o")
    if str(target) in ("/dev/null", "/dev/stdout", "/dev/stderr"):
        with open(target, "w", encoding="utf-8") as fh:
            fh.write(text)
        return
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=directory)
    try:
        os.fchmod(fd, 0o666 & ~current_umask())  # as open() would make it, not mkstemp's 0600
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def read_text(path: str, error: type[InputError], what: str) -> str:
    """A UTF-8 text file (BOM allowed), or `error` with one line saying why not."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except FileNotFoundError:
        raise error(f"no such {what} file", source=path) from None
    except IsADirectoryError:
        raise error(f"is a directory, not a {what} file", source=path) from None
    except OSError as exc:
        raise error(f"cannot read {what} file: {exc.strerror or exc}", source=path) from None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise error(f"not UTF-8 text (bad byte at offset {exc.start})", source=path) from None


def yaml_problem(exc: Exception) -> tuple[str, str]:
    """What a YAML parser's error says, and where (``line N``, or ``yaml`` when it does not say)."""
    mark = getattr(exc, "problem_mark", None)
    return str(getattr(exc, "problem", None) or exc), f"line {mark.line + 1}" if mark is not None else "yaml"


def read_plan_document(path: str) -> Any:
    """A plan file as `plastic plan` writes it, JSON or YAML (`--format json | yaml`), as a document;
    InputError with one line on a file that is neither."""
    text = read_text(path, InputError, "plan")
    if text.lstrip().startswith("{"):
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"not valid JSON ({exc.msg})", source=path, field=f"line {exc.lineno}") from None
    import yaml  # deferred: only YAML plans pay for it

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        problem, where = yaml_problem(exc)
        raise InputError(f"neither JSON nor valid YAML ({problem})", source=path, field=where) from None
