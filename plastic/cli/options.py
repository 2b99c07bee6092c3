"""Options that several commands share, declared once so their names, types and metavars cannot drift.

    option(..., aliases=(...))   an option with old spellings that still work but are not shown
    Seconds                      a finite number of seconds (metavar SECONDS), with one-line errors
    notice_seconds_option        --notice-seconds: the warning a spot interruption gives
    catalog_option               --catalog FILE: an instance catalog
    URL                          the metavar of every option that takes a URL
    outdir_settings              --outdir: a directory, or s3://BUCKET/PREFIX

Kept light (click and plastic.core only): every command module imports it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import click

from plastic.core.book.spot_events import INTERRUPTION_NOTICE_S

URL = "URL"
NOTICE_ALIASES = ("--interrupt-notice-seconds",)  # the spelling of `plastic local up` and `local serve` before


class _AliasedOption(click.Option):
    """An option that its hidden ``aliases`` set too: the parser takes them, help and errors name only
    the option's own spellings (a hidden second option could not share the value and its default)."""

    def __init__(self, *args: Any, aliases: Sequence[str] = (), **kwargs: Any):
        super().__init__(*args, **kwargs)
        if self.is_flag or self.count or self.multiple:
            raise TypeError("aliases are for options that take one value")
        self.aliases = tuple(aliases)

    def add_to_parser(self, parser: Any, ctx: click.Context) -> None:
        super().add_to_parser(parser, ctx)
        if self.aliases:
            parser.add_option(obj=self, opts=self.aliases, dest=self.name, action="store", nargs=self.nargs)


def option(*param_decls: str, aliases: Sequence[str] = (), **attrs: Any) -> Callable[[Any], Any]:
    """click.option, also taking each of ``aliases`` (old spellings: they work, --help does not show them)."""
    return click.option(*param_decls, cls=_AliasedOption, aliases=aliases, **attrs)


class Seconds(click.FloatRange):
    """A finite number of seconds, at least ``min`` (above it with ``min_open``), at most ``max``."""

    name = "seconds"

    def __init__(self, min: float = 0.0, max: float | None = None, *, min_open: bool = False):
        super().__init__(min=min, max=max, min_open=min_open)

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str:
        return "SECONDS"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        try:
            seconds = float(value)
        except (TypeError, ValueError):
            self.fail(f"not a number of seconds: {value!r}", param, ctx)
        low = self.min if self.min is not None else 0.0
        if not math.isfinite(seconds) or seconds < low or (self.min_open and seconds == low):
            self.fail(f"must be {'>' if self.min_open else '>='} {low:g} seconds, got {value!r}", param, ctx)
        if self.max is not None and seconds > self.max:
            self.fail(f"must be <= {self.max:g} seconds, got {value!r}", param, ctx)
        return seconds


def notice_seconds_option(help: str) -> Callable[[Any], Any]:
    """``--notice-seconds SECONDS``: how long before an interrupted spot machine goes its notice comes
    (AWS: two minutes); ``--interrupt-notice-seconds`` still works."""
    return option("--notice-seconds", "notice_seconds", aliases=NOTICE_ALIASES, type=Seconds(),
                  default=INTERRUPTION_NOTICE_S, show_default=True, help=help)


def catalog_option(help: str) -> Callable[[Any], Any]:
    """``--catalog FILE`` as the ``catalog_path`` parameter: an existing file (click says so in one line)."""
    return click.option("--catalog", "catalog_path", type=click.Path(exists=True, dir_okay=False), help=help)


def outdir_settings(given: str) -> dict[str, object]:
    """--outdir (`plastic run`, `submit`) as the run's settings: a directory (outdir), or an s3:// URL the
    outputs go to (out_url)."""
    if given.startswith("s3://"):
        if not given.removeprefix("s3://").split("/", 1)[0]:
            raise click.BadParameter("s3://BUCKET/PREFIX names a bucket", param_hint="--outdir")
        return {"outdir": Path("."), "out_url": given}
    if "://" in given:
        raise click.BadParameter(f"{given}: a directory or s3://BUCKET/PREFIX", param_hint="--outdir")
    if Path(given).is_file():
        raise click.BadParameter(f"{given} is a file", param_hint="--outdir")
    return {"outdir": Path(given)}
