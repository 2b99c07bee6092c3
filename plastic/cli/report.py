"""`plastic report RUN [--html FILE]`: a finished (or running) run's report, or its picture as a web page."""

from __future__ import annotations

import json
from pathlib import Path

import click

from plastic.cli.service import _redis_option, run_directory


def _run_dir(run: str, redis_url: str | None, redis_ca: str | None) -> Path:
    """RUN as a run directory, or as a run id known to the service's Redis (its ``run_dir`` field)."""
    from plastic.core.errors import InputError

    path = run_directory(run)
    if path is not None:
        return path
    from plastic.store.keys import check_run_id

    try:
        check_run_id(run)
    except ValueError:
        raise InputError("neither a run directory nor a run id", source=run) from None
    from plastic.cli.service import _existing_run, _store

    store, conn = _store(redis_url, redis_ca)
    try:
        record = _existing_run(store, run)
        run_dir = record.fields.get("run_dir")
        if run_dir and not Path(run_dir).is_dir():  # on the service's machine: its archive, if the run ended
            archived = store.run_archive(run)
            if archived is not None:
                return _unpacked(run, archived)
    finally:
        conn.close()
    if not run_dir:
        raise InputError(f"run {run} has no run directory yet ({record.state})", source=run)
    if not Path(run_dir).is_dir():
        raise InputError(f"its directory is on the service's machine ({run_dir}), and the service keeps a copy "
                         f"in Redis only once the run has ended ({record.state})", source=run)
    return Path(run_dir)


def _unpacked(run_id: str, archived: bytes) -> Path:
    """The run's archive (plastic.service.archive) in a directory of this user's, made anew each time."""
    import shutil
    import tempfile

    from plastic.home import plastic_home
    from plastic.service.archive import unpack_run_dir

    where = plastic_home() / "served-runs"
    where.mkdir(parents=True, exist_ok=True, mode=0o700)
    fresh = Path(tempfile.mkdtemp(prefix=f"{run_id}-", dir=where))
    target = where / run_id
    unpack_run_dir(archived, fresh)
    shutil.rmtree(target, ignore_errors=True)
    fresh.rename(target)
    return target


@click.command("report", short_help="Show a run's report, or write its picture as HTML.")
@click.argument("run")
@click.option("--html", "html_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the run's picture here: one self-contained HTML page (timeline of every attempt per "
                   "agent, cost over time against all on-demand, the plan beside what ran).")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True,
              help="Without --html: the report as a table, or as JSON (plastic.report/v1).")
@_redis_option
def report(run: str, html_path: Path | None, fmt: str, redis_url: str | None, redis_ca: str | None) -> None:
    """The report of RUN: a run directory (plastic run --run-dir), or the id of a run of `plastic serve`."""
    from plastic.core.errors import InputError
    from plastic.fileio import write_atomically
    from plastic.report.picture import load_picture

    if html_path is not None and not (html_path.parent if str(html_path.parent) else Path(".")).is_dir():
        raise InputError("directory does not exist", source=str(html_path), field="--html")
    picture = load_picture(_run_dir(run, redis_url, redis_ca))
    if html_path is not None:
        from plastic.report.html import render_html

        write_atomically(str(html_path), render_html(picture))
        click.echo(f"plastic: wrote {html_path}: {len(picture.attempts)} attempt(s) on {len(picture.lanes)} "
                   f"agent(s)", err=True)
        return
    if fmt == "json":
        click.echo(json.dumps(picture.report.to_json(), indent=2))
        return
    from rich.console import Console

    from plastic.report.view import report_table

    console = Console()
    if not console.is_terminal:
        console = Console(width=160)
    console.print(report_table(picture.report))
    if picture.running:
        console.print("(the run has not ended: this is where it stands)")
