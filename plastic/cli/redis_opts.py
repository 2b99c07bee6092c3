"""`--redis URL` and `--redis-ca FILE`: every command that reaches plastic's Redis takes both.

The URL may name an ACL user and its password (``redis://USER:PASSWORD@HOST:PORT/DB``) and ask for
TLS (``rediss://``); the CA file goes into the URL (plastic.store.urls.with_ca), so the processes a
command starts get it with the URL, through the environment, never on a command line.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import click

from plastic.cli.options import URL
from plastic.store.urls import URL_ENV

CA_HELP = ("CA certificate file (PEM) that signs the TLS server's certificate, for a rediss:// URL "
           "(default: the system's CAs).")


def redis_options(url_help: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The two options, as ``redis_url`` and ``redis_ca`` parameters."""

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        command = click.option("--redis-ca", "redis_ca", type=click.Path(dir_okay=False), help=CA_HELP)(command)
        return click.option("--redis", "redis_url", metavar=URL, help=url_help)(command)

    return decorate


def redis_url(url: str | None, ca_file: str | None) -> str | None:
    """``--redis`` trusting ``--redis-ca``, checked (InputError: one line, exit 2).  Without ``--redis``
    the command reads ``$PLASTIC_REDIS_URL`` itself (None here), except when ``--redis-ca`` is given:
    then the CA goes into that URL."""
    from plastic.store.urls import check_url, with_ca

    if ca_file is not None:
        url = with_ca(url or os.environ.get(URL_ENV) or None, ca_file)
    return None if url is None else check_url(url)
