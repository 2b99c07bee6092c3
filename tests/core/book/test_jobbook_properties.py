"""JobBook under random interleavings of events (hypothesis state machine).

Whatever happens: at most one ReportJobEnd per job, never a reliable-only job on a preemptible
agent, never a launch onto an agent under a termination notice, every update with a uuid is
acknowledged after the book recorded it, and validate() holds after every step.  The machine itself is
tests/core/book/jobbook_machine.py (tests/framework/test_book_redis_properties.py runs it too).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, settings

from tests.core.book.jobbook_machine import JobBookMachine

JobBookMachine.TestCase.settings = settings(max_examples=300, stateful_step_count=40, deadline=None,
                                            suppress_health_check=[HealthCheck.too_slow])
TestJobBook = JobBookMachine.TestCase
TestJobBook.pytestmark = [pytest.mark.slow]  # make test-fast leaves it out
