"""The state machine driven on an asyncio loop: its effects carried out in order, one loop timer armed
for its earliest deadline, and allocation passes run shortly after anything that changes resources.

Effects produced while others are carried out (an agent's callback reporting a status) queue behind
them, so the state sees its stimuli one at a time.  An allocation pass runs `allocation_delay_s` after
the state first asks for one, so a burst of task exits becomes one OFFERS event covering every agent.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from plastic.local.state import MasterState


class EffectLoop:
    """Feeds the state's effects to `carry_out` and the loop's time to the state."""

    def __init__(self, state: MasterState, carry_out: Callable[[Any], None], allocation_delay_s: float):
        self.state = state
        self._carry_out = carry_out
        self._allocation_delay_s = allocation_delay_s
        self._pending: deque = deque()
        self._applying = False
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at: float | None = None
        self._alloc_scheduled = False

    def apply(self, effects: list) -> None:
        """Carry out effects in order; effects produced meanwhile (agent callbacks) queue behind."""
        self._pending.extend(effects)
        if self._applying:
            return
        self._applying = True
        try:
            while self._pending:
                self._carry_out(self._pending.popleft())
        finally:
            self._applying = False
        self.rearm()
        if self.state.needs_allocation and not self._alloc_scheduled:
            self._alloc_scheduled = True
            asyncio.get_running_loop().call_later(self._allocation_delay_s, self._allocate)

    def rearm(self) -> None:
        """Arm the loop timer for the state's earliest deadline (if it moved)."""
        deadline = self.state.next_deadline()
        if deadline == self._timer_at:
            return
        if self._timer is not None:
            self._timer.cancel()
        self._timer_at = deadline
        self._timer = None
        if deadline is not None:
            delay = max(0.0, deadline - time.time())
            self._timer = asyncio.get_running_loop().call_later(delay, self._fire)

    def cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()

    def _allocate(self) -> None:
        self._alloc_scheduled = False
        self.apply(self.state.allocate(time.time()))

    def _fire(self) -> None:
        self._timer = None
        self._timer_at = None
        self.apply(self.state.advance(time.time()))
