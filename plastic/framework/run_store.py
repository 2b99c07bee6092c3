"""Opening the run the Toil plugin records into (``--plasticRedis`` / ``--plasticRun``), and the policy file.

Both are checked when the batch system is built, so a wrong URL, run id or policy file stops
toil-cwl-runner with one line instead of a half-recorded run.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from redis import Redis
from redis.exceptions import RedisError

from plastic.core.book.policy import PolicyError, PolicyTable, parse_policy_text
from plastic.core.book.runtimes import KEEP_PER_TOOL
from plastic.framework.store_recorder import StoreRecorder
from plastic.framework.store_writer import StoreWriter
from plastic.store import RecordExistsError, Store, StoreError
from plastic.store.embedded import open_url
from plastic.store.urls import redact

log = logging.getLogger(__name__)

SOCKET_TIMEOUT_S = 10.0
CONNECT_TIMEOUT_S = 5.0


@dataclass
class RunHandle:
    client: Redis
    store: Store
    run_id: str
    created: bool

    def recorder(self) -> StoreRecorder:
        return StoreRecorder(self.store, self.run_id, writer=StoreWriter(self.store))

    def close(self) -> None:
        self.client.close()


def open_run(url: str, run_id: str | None, *, fields: Mapping[str, Any] | None = None,
             prefix: str | None = None) -> RunHandle:
    """Connect (PING at once) and find the run, creating it when there is no id or no such run.

    Raises StoreError (one line: the URL without its password, or the run) when Redis cannot be reached
    or refuses the client (user, password, TLS: a ``rediss://`` URL may carry its CA file as
    ``ssl_ca_certs``), or the id is not a valid run id."""
    client = open_url(url, option="--plasticRedis", socket_timeout=SOCKET_TIMEOUT_S,
                      socket_connect_timeout=CONNECT_TIMEOUT_S)  # UnreachableError: one line
    try:
        store = Store(client) if prefix is None else Store(client, prefix=prefix)
        created = False
        if run_id is None:
            run_id = store.create_run(fields=fields)
            created = True
            log.info("plastic: recording into new run %s (Redis %s)", run_id, redact(url))
        elif store.get_run(run_id) is None:
            try:
                store.create_run(run_id, fields=fields)
                created = True
                log.info("plastic: run %s did not exist; created it (Redis %s)", run_id, redact(url))
            except RecordExistsError:  # created meanwhile by someone else: use it
                pass
        else:
            log.info("plastic: recording into run %s (Redis %s)", run_id, redact(url))
    except RedisError as error:
        client.close()
        raise StoreError(f"cannot reach Redis at {redact(url)}: {error}") from None
    except ValueError as error:  # an invalid run id
        client.close()
        raise StoreError(str(error), source="--plasticRun") from None
    except BaseException:
        client.close()
        raise
    return RunHandle(client, store, run_id, created)


def load_policy(path: str | Path) -> PolicyTable:
    """Read and validate a policy file; PolicyError names the file (and the field)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise PolicyError(f"cannot read the policy file: {error.strerror or error}", source=str(path)) from None
    except UnicodeDecodeError as error:
        raise PolicyError(f"not UTF-8 text: {error.reason}", source=str(path)) from None
    return parse_policy_text(text, source=str(path))


def runtime_history(store: Store | None, planned: Mapping[str, Sequence[float]]) -> Callable[[str], Sequence[float]]:
    """The answer to the book's LoadRuntimeHistory: a tool's recorded runtimes in the run's store (newest
    first, this and earlier runs), else the plan's runtimes for its step (plastic.core.book.runtimes)."""
    def history(tool: str) -> Sequence[float]:
        return (store.runtime_history(tool, KEEP_PER_TOOL) if store is not None else []) or planned.get(tool, ())

    return history
