"""Errors of the Redis store, and the translation of the Lua scripts' error replies."""

from __future__ import annotations

import json

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from plastic.core.book.lifecycle import TransitionError
from plastic.core.errors import PlasticError

# Redis cannot answer now but will: not reachable, timed out, loading its data after a restart
# (BusyLoadingError is a ConnectionError), or refusing writes because it cannot write its AOF (a full
# disk: MISCONF) or is read-only.  What failed is retried, never dropped.
UNAVAILABLE_REPLIES = ("MISCONF", "READONLY", "MASTERDOWN")


def is_unavailable(error: BaseException) -> bool:
    if isinstance(error, (RedisConnectionError, RedisTimeoutError, OSError)):
        return True
    return isinstance(error, ResponseError) and str(error).split(" ", 1)[0] in UNAVAILABLE_REPLIES


class StoreError(PlasticError):
    """The state store cannot do what was asked (no server, a bad reply, ...)."""


class UnreachableError(StoreError):
    """The Redis the user named cannot be used: nothing answers there, or it refuses the client (user,
    password, TLS certificate).  Bad input, like a wrong file name: exit 2."""

    exit_code = 2


class UnknownRecordError(StoreError):
    """The run, task or agent does not exist."""

    def __init__(self, kind: str, record_id: str):
        super().__init__(f"no such {kind}", source=f"{kind} {record_id}")
        self.kind = kind
        self.record_id = record_id


class RecordExistsError(StoreError):
    """A record that must be new already exists."""

    def __init__(self, kind: str, record_id: str):
        super().__init__(f"{kind} already exists", source=f"{kind} {record_id}")
        self.kind = kind
        self.record_id = record_id


def translate(error: ResponseError) -> Exception:
    """The exception a script's ``PLASTIC_*`` error reply stands for (other errors unchanged)."""
    code, _, rest = str(error).partition(" ")
    if not code.startswith("PLASTIC_"):
        return error
    doc = json.loads(rest)
    if code == "PLASTIC_REJECTED":
        return TransitionError(doc["kind"], doc["id"], doc["current"], doc["wanted"], expected=doc["expected"] or None)
    if code == "PLASTIC_MISSING":
        return UnknownRecordError(doc["kind"], doc["id"])
    if code == "PLASTIC_EXISTS":
        return RecordExistsError(doc["kind"], doc["id"])
    return StoreError(f"store script refused: {code} {rest}")
