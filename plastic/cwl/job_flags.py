"""Workflow inputs given on the command line, as cwltool and toil-cwl-runner take them
(`plastic run wf.cwl --reads r.fq --threads 4`).

The flags after WORKFLOW [JOB] are told apart from Toil's options by the names of the workflow's
inputs: `--NAME` (`-N` or `--N` for a one-letter name, `--NAME=VALUE`, `--RECORD.FIELD`) starts an input
and the words after it that are not options are its values.  They are read with cwltool's own
parser of a process's inputs (`cwltool.argparser.generate_parser`: a File or Directory is a path,
an array is the flag repeated, a boolean is the flag alone) into a job order: the JOB file's
values, when one is given, with the flags' on top.  Every location in it is absolute, so the job
order can be written anywhere.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from typing import Any

from plastic.core.errors import InputError


def _flag_name(token: str) -> str | None:
    """The name a token gives as an option: `--reads` or `--reads=x` -> `reads`, `-n` -> `n` (cwltool's
    flag of a one-letter name; `--n` is taken for it too); else None."""
    if token.startswith("--"):
        name = token[2:].split("=", 1)[0]
        return name or None
    if len(token) == 2 and token[0] == "-" and token[1].isalpha():
        return token[1]
    return None


def _as_cwltool_spells(flags: Sequence[str]) -> list[str]:
    """``flags`` with `--n` / `--n=VALUE` of a one-letter input as cwltool's parser takes it: `-n`."""
    out: list[str] = []
    for token in flags:
        name = _flag_name(token)
        if token.startswith("--") and name is not None and len(name) == 1:
            out.append("-" + name)
            if "=" in token:
                out.append(token.split("=", 1)[1])
        else:
            out.append(token)
    return out


def split_input_flags(args: Sequence[str], inputs: frozenset[str]) -> tuple[list[str], list[str]]:
    """(the workflow's inputs, everything else) of ``args``, each in its order.  An option naming an
    input (or a field of a record input, `--RECORD.FIELD`) takes the words after it up to the next
    option; every other word goes with the rest."""
    mine: list[str] = []
    rest: list[str] = []
    taking = False
    for token in args:
        name = _flag_name(token)
        if name is not None:
            taking = name in inputs or name.split(".", 1)[0] in inputs
        elif token.startswith("-") and token != "-" and not _number(token):
            taking = False  # an option of Toil's
        (mine if taking else rest).append(token)
    return mine, rest


def _number(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True


def input_names(process: Any) -> frozenset[str]:
    from cwltool.process import shortname

    return frozenset(shortname(inp["id"]) for inp in process.tool["inputs"])


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of printing a usage and exiting."""

    def error(self, message: str):  # type: ignore[override]
        raise InputError(message, source="inputs on the command line")


def job_order_from_flags(process: Any, flags: Sequence[str], job_path: str | None = None) -> dict[str, Any]:
    """The job order ``flags`` give (the JOB file's values under them); ``process`` is cwltool's."""
    from cwltool.argparser import generate_parser
    from schema_salad.ref_resolver import file_uri

    from plastic.cwl.values import read_job_document

    namemap: dict[str, str] = {}
    records: list[str] = []
    parser = generate_parser(_Parser(prog="plastic run", add_help=False), process, namemap, records,
                             input_required=False, base_uri=file_uri(os.getcwd()) + "/")
    known = {flag for action in parser._actions for flag in action.option_strings}
    flags = _as_cwltool_spells(flags)
    for token in flags:
        name = _flag_name(token)
        if name is not None and ("-" if len(name) == 1 else "--") + name not in known:
            raise InputError(f"input '{name}' cannot be given as a flag (its type has no command-line form): "
                             f"give it in a JOB file", source="inputs on the command line")
    values = vars(parser.parse_args(list(flags)))
    stray = values.pop("job_order", None)  # cwltool's parser takes one loose word as a job order
    if stray is not None:
        raise InputError(f"unrecognized arguments: {stray}", source="inputs on the command line")
    given = {name.replace("-", "_") for name in map(_flag_name, flags) if name is not None}
    job = read_job_document(job_path) if job_path is not None else {}
    for dest, value in values.items():
        if dest not in given:
            continue  # not on the command line: the JOB file's value (or the input's default) stands
        record, dot, field = dest.partition(".")
        if dot and record in records:
            job.setdefault(record, {})
            job[record][field] = value
        else:
            job[namemap.get(dest, dest)] = value
    return job
