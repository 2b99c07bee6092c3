"""What the store counts as Redis away for now (retried) rather than a refusal."""

from __future__ import annotations


def test_what_counts_as_redis_being_away_for_now():
    from redis.exceptions import (
        BusyLoadingError,
        ConnectionError,
        ResponseError,
        TimeoutError,
    )

    from plastic.store.store_errors import is_unavailable

    for away in (ConnectionError("refused"), TimeoutError("slow"), BusyLoadingError("LOADING"), OSError(28, "full"),
                 ResponseError("MISCONF Errors writing to the AOF file: No space left on device"),
                 ResponseError("READONLY You can't write against a read only replica.")):
        assert is_unavailable(away), away
    for refused in (ResponseError("PLASTIC_TRANSITION {}"), ResponseError("WRONGTYPE Operation"), ValueError("x")):
        assert not is_unavailable(refused), refused
