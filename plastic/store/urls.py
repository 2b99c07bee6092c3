"""Redis URLs as they may be shown: the password replaced, everything else kept.

`redact("redis://user:S3cret@host:6379/0")` is ``redis://user:****@host:6379/0``.  Logs, run files,
reports and the status commands show URLs through it; the URL itself travels only in memory and in
the environment of plastic's own processes (``PLASTIC_REDIS_URL``), never on a command line.
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

MASK = "****"


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
