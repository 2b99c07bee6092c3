"""Redis URLs: checked, given a CA file, and shown without their password.

`redact("redis://user:S3cret@host:6379/0")` is ``redis://user:****@host:6379/0``.  Logs, run files,
reports and the status commands show URLs through it; the URL itself travels only in memory and in
the environment of plastic's own processes (``PLASTIC_REDIS_URL``), never on a command line.

TLS: a ``rediss://`` URL; the CA that signs the server's certificate (``--redis-ca FILE``) rides in
the URL as its ``ssl_ca_certs`` query parameter, which redis-py's ``from_url`` hands to the TLS
connection, so every process that gets the URL (the Toil leader, the watchers) trusts the same CA.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import parse_qsl, quote, urlsplit, urlunsplit

from plastic.core.errors import InputError

MASK = "****"
SCHEMES = ("redis", "rediss", "unix")
CA_PARAM = "ssl_ca_certs"
URL_ENV = "PLASTIC_REDIS_URL"  # the Redis URL handed to a process (never on its command line)


def check_url(url: str, option: str = "--redis") -> str:
    """``url`` when redis-py can use it: a redis://, rediss:// or unix:// URL whose CA file (if any)
    is readable; else an InputError naming the option and the URL (redacted)."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a port that is not a number
    except ValueError as exc:
        raise InputError(f"not a Redis URL: {redact(url)} ({exc})", field=option) from None
    if parts.scheme not in SCHEMES:
        raise InputError(f"not a Redis URL: {redact(url)} (redis://[USER:PASSWORD@]HOST[:PORT][/DB], "
                         "rediss://... for TLS, or unix:///PATH)", field=option)
    for name, value in parse_qsl(parts.query):
        if name == CA_PARAM:
            if parts.scheme != "rediss":
                raise InputError(f"a CA file goes with a rediss:// (TLS) URL, not {redact(url)}", field=option)
            _check_readable(value, "--redis-ca" if option == "--redis" else option)
    return url


def with_ca(url: str | None, ca_file: str | Path | None, option: str = "--redis-ca") -> str | None:
    """``url`` trusting the CA in ``ca_file`` (an absolute path in its ``ssl_ca_certs`` parameter,
    replacing any there); InputError when the file cannot be read or the URL is not rediss://."""
    if ca_file is None:
        return url
    if not url or urlsplit(url).scheme != "rediss":
        shown = redact(url) if url else "the embedded Redis"
        raise InputError(f"goes with a rediss:// (TLS) Redis URL, not {shown}", field=option)
    path = os.path.abspath(ca_file)
    _check_readable(path, option)
    return set_ca(url, path)


def set_ca(url: str, path: str) -> str:
    """``url`` with ``path`` as its CA file (replacing any), unchecked: a path on another machine."""
    parts = urlsplit(url)
    kept = [q for q in parts.query.split("&") if q and q.partition("=")[0] != CA_PARAM]
    query = "&".join([*kept, f"{CA_PARAM}={quote(path, safe='/')}"])
    return urlunsplit((parts.scheme, parts.netloc, parts.path, query, parts.fragment))


def ca_file(url: str | None) -> str | None:
    """The CA file a ``rediss://`` URL names (its ssl_ca_certs parameter), or None."""
    if not url:
        return None
    try:
        return dict(parse_qsl(urlsplit(url).query)).get(CA_PARAM)
    except ValueError:
        return None


def _check_readable(path: str, option: str) -> None:
    try:
        with open(path, "rb") as fh:
            fh.read(1)
    except OSError as exc:
        raise InputError(f"cannot read the CA file: {exc.strerror or exc}", source=path, field=option) from None


def has_password(url: str | None) -> bool:
    if not url:
        return False
    try:
        return urlsplit(url).password is not None
    except ValueError:
        return False


def redact(url: str | None) -> str | None:
    """``url`` with its password (and a password given as a query parameter) replaced by ****."""
    if not url:
        return url
    try:
        parts = urlsplit(url)
    except ValueError:
        return MASK
    secret_query = any(q.partition("=")[0].lower() == "password" for q in parts.query.split("&"))
    if parts.password is None and not secret_query:
        return url
    netloc = parts.netloc
    if parts.password is not None:
        user = parts.username or ""
        host = netloc.rsplit("@", 1)[1]
        netloc = f"{user}:{MASK}@{host}"
    query = "&".join(f"{k}={MASK}" if k.lower() == "password" else f"{k}={v}" if sep else k
                     for k, sep, v in (q.partition("=") for q in parts.query.split("&") if q)) if parts.query else ""
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def is_redacted(url: str | None) -> bool:
    return bool(url) and f":{MASK}@" in str(url)
