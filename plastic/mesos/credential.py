"""Framework credentials for a Mesos master that authenticates HTTP frameworks.

A master started with ``--authenticate_http_frameworks --http_framework_authenticators=basic
--credentials=FILE`` answers every /api/v1/scheduler request without a valid
``Authorization: Basic`` header with 401 (``WWW-Authenticate: Basic realm="mesos-master-scheduler"``),
and a SUBSCRIBE whose FrameworkInfo names another principal than the authenticated one with 400
(both measured on a Mesos 1.11.1 master).

The secret is read from a file, never taken on a command line (where ``ps`` shows it to every user
of the machine):

- the framework's credential (``plastic run --mesos-credential FILE``, the batch system's
  ``--plasticCredential FILE``): a JSON object ``{"principal": "...", "secret": "..."}`` or one
  line ``PRINCIPAL SECRET``;
- the master's list (``plastic local up --credentials FILE``): Mesos' own format, JSON
  ``{"credentials": [{"principal": "...", "secret": "..."}, ...]}`` or one ``PRINCIPAL SECRET``
  per line.

Bad files raise an InputError naming the file and what is wrong, without the secret.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import json
import logging
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from plastic.core.errors import InputError

log = logging.getLogger(__name__)

CREDENTIAL_ENV = "PLASTIC_MESOS_CREDENTIAL"  # the path of the framework's credential file, for child processes
REALM = "mesos-master-scheduler"


@dataclass(frozen=True, slots=True)
class Credential:
    principal: str
    secret: str = field(repr=False)

    def authorization(self) -> str:
        """The value of the ``Authorization`` header (HTTP basic)."""
        token = base64.b64encode(f"{self.principal}:{self.secret}".encode()).decode("ascii")
        return f"Basic {token}"


def _read(path: str | Path) -> str:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError("no such file", source=str(path)) from None
    except IsADirectoryError:
        raise InputError("is a directory, not a credential file", source=str(path)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read it ({type(exc).__name__})", source=str(path)) from None
    try:
        mode = p.stat().st_mode
        if mode & (stat.S_IRWXG | stat.S_IRWXO):
            log.warning("%s: a secret readable by others (mode %o); chmod 600 it", path, stat.S_IMODE(mode))
    except OSError:
        pass
    return text


def _from_doc(doc: object, source: str, where: str) -> Credential:
    if not isinstance(doc, dict):
        raise InputError("a credential is an object with 'principal' and 'secret'", source=source, field=where)
    unknown = sorted(set(doc) - {"principal", "secret"})
    if unknown:
        raise InputError(f"unknown key {unknown[0]!r} (a credential has 'principal' and 'secret')",
                         source=source, field=where)
    principal, secret = doc.get("principal"), doc.get("secret")
    if not isinstance(principal, str) or not principal.strip():
        raise InputError("'principal' must be a non-empty string", source=source, field=where)
    if not isinstance(secret, str) or not secret:
        raise InputError("'secret' must be a non-empty string", source=source, field=where)
    if ":" in principal:
        raise InputError("'principal' cannot contain ':' (HTTP basic authentication)", source=source, field=where)
    return Credential(principal.strip(), secret)


def _from_line(line: str, source: str, where: str) -> Credential:
    parts = line.split()
    if len(parts) != 2:
        raise InputError("expected PRINCIPAL SECRET (two words)", source=source, field=where)
    return _from_doc({"principal": parts[0], "secret": parts[1]}, source, where)


def _lines(text: str) -> Iterable[tuple[int, str]]:
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip() and not line.lstrip().startswith("#"):
            yield number, line.strip()


def read_credential(path: str | Path) -> Credential:
    """The framework's credential from ``path`` (see the module docstring)."""
    source = str(path)
    text = _read(path)
    if text.lstrip()[:1] in ("{", "["):  # JSON
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"not valid JSON (line {exc.lineno})", source=source) from None
        return _from_doc(doc, source, "credential")
    lines = list(_lines(text))
    if len(lines) != 1:
        raise InputError(f"expected one line PRINCIPAL SECRET, found {len(lines)}", source=source)
    number, line = lines[0]
    return _from_line(line, source, f"line {number}")


def read_credentials(path: str | Path) -> tuple[Credential, ...]:
    """The credentials a master accepts, from ``path`` (see the module docstring)."""
    source = str(path)
    text = _read(path)
    found: list[Credential]
    if text.lstrip()[:1] in ("{", "["):  # JSON
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"not valid JSON (line {exc.lineno})", source=source) from None
        items = doc.get("credentials") if isinstance(doc, dict) else None
        if not isinstance(items, list):
            raise InputError("expected {\"credentials\": [{\"principal\": ..., \"secret\": ...}, ...]}",
                             source=source, field="credentials")
        found = [_from_doc(item, source, f"credentials[{i}]") for i, item in enumerate(items)]
    else:
        found = [_from_line(line, source, f"line {number}") for number, line in _lines(text)]
    if not found:
        raise InputError("no credentials in it", source=source)
    return tuple(found)


def authenticated_principal(header: str | None, accepted: Iterable[Credential]) -> str | None:
    """The principal an ``Authorization`` header proves, among ``accepted``; None when it proves none."""
    if not header or not header.startswith("Basic "):
        return None
    try:
        principal, sep, secret = base64.b64decode(header[6:].strip(), validate=True).decode("utf-8").partition(":")
    except (binascii.Error, UnicodeDecodeError):
        return None
    if not sep:
        return None
    for cred in accepted:
        if cred.principal == principal and hmac.compare_digest(cred.secret.encode(), secret.encode()):
            return principal
    return None


def credential_from_env() -> Credential | None:
    """The credential named by $PLASTIC_MESOS_CREDENTIAL (a path), if set."""
    path = os.environ.get(CREDENTIAL_ENV)
    return read_credential(path) if path else None


def check_credential(master: str, credential: Credential, *, source: str | None = None,
                     timeout_s: float = 10.0) -> None:
    """Ask ``master`` whether it takes ``credential``, before a run starts: an empty call with the
    credential is answered 401 when the master refuses it (authentication comes before the call is read)
    and 400 when it takes it; nothing is created.  A refusal raises an InputError naming the principal
    (never the secret) and ``source`` (the credential file); a master that cannot be reached is left
    to the driver, which reports it the same way with or without a credential."""
    import httpx

    from plastic.mesos.driver_errors import MesosError
    from plastic.mesos.masters import MasterEndpoint

    try:
        url = MasterEndpoint(master, zk_timeout_s=timeout_s).url("/api/v1/scheduler")
        for _ in range(3):  # a master that is not the leader redirects to the leader
            response = httpx.post(url, content=b"{}", timeout=timeout_s, trust_env=False, follow_redirects=False,
                                  headers={"Content-Type": "application/json", "Accept": "application/json",
                                           "Authorization": credential.authorization()})
            if response.status_code != 307 or not response.headers.get("location"):
                break
            location = response.headers["location"]
            url = ("http:" + location if location.startswith("//") else location)
    except (httpx.HTTPError, OSError, ValueError, MesosError) as exc:
        log.info("credential not checked before the run: %s", exc)
        return
    if response.status_code in (401, 403):
        raise InputError(f"the Mesos master at {master} refused the credential of principal "
                         f"{credential.principal!r} ({response.status_code} {response.reason_phrase})",
                         source=source)
