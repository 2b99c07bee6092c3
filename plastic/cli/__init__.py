"""The `plastic` command line, in one place: the group and its commands, one module per command group.

    plan.py     plastic plan, plastic inspect          run.py      plastic run (and --resume)
    lower.py    plastic lower                          service.py  plastic serve, submit, status, logs
    local.py    plastic local ...                      watch.py    plastic agent-watch
    aws.py      plastic sqs-watch, sqs-setup           errors.py   one line and a non-zero exit per error
    report.py   plastic report (the run's picture)
    group.py    the `plastic` group with every command registered
    redis_opts.py  --redis URL / --redis-ca FILE, shared by every command that reaches Redis
    options.py  the options several commands share (--notice-seconds, --catalog, SECONDS), old spellings

Every command is a thin shell: heavy libraries load inside the commands that need them, so
`plastic plan TRACE` starts fast.
"""

from __future__ import annotations

from typing import Any


def main() -> None:
    """Entry point: one clear line and a non-zero exit for every expected error."""
    from plastic.cli.error_exit import run_command
    from plastic.cli.group import cli

    run_command(cli)


def __getattr__(name: str) -> Any:
    """`plastic.cli.cli`, the group, loaded on first use (this package stays light for its submodules:
    `python -m plastic.watch` and `python -m plastic.local` import only the command they run)."""
    if name == "cli":
        from plastic.cli.group import cli

        return cli
    raise AttributeError(name)
