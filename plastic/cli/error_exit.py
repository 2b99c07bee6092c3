"""Running a click command the plastic way: one clear line and a non-zero exit for every expected error."""

from __future__ import annotations

import os
import sys

import click

from plastic.core.errors import PlasticError


def run_command(command: click.Command) -> None:
    """Run `command` on sys.argv; expected errors print one line, never a traceback."""
    try:
        command.main(standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("plastic: aborted", err=True)
        sys.exit(130)
    except click.UsageError as exc:  # one line, naming the command, instead of click's usage block
        where = _command_path(exc.ctx)
        click.echo(f"{where}: {exc.format_message()} (see {where} --help)", err=True)
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except PlasticError as exc:
        click.echo(f"plastic: {exc}", err=True)
        sys.exit(exc.exit_code)
    except BrokenPipeError:
        sys.exit(1)
    except Exception as exc:  # noqa: BLE001 - the last line of defence: no traceback for users
        if os.environ.get("PLASTIC_DEBUG"):
            raise
        click.echo(f"plastic: internal error: {type(exc).__name__}: {exc} (set PLASTIC_DEBUG=1 for a traceback)",
                   err=True)
        sys.exit(70)


def _command_path(ctx: click.Context | None) -> str:
    """`plastic SUBCOMMAND ...` whatever the program was called (python -m plastic.cli, a script)."""
    names: list[str] = []
    while ctx is not None and ctx.parent is not None:
        names.append(ctx.info_name or "")
        ctx = ctx.parent
    return " ".join(["plastic", *reversed(names)])
