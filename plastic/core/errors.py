"""The one error hierarchy of plastic.

Every error carries data (where it happened, which field, what was wrong) so
the CLI can print one clear line and the caller can act on it.  Input errors
exit with status 2, as the brief asks for bad input.
"""

from __future__ import annotations


class PlasticError(Exception):
    """Base of every error plastic raises on purpose."""

    exit_code = 1

    def __init__(self, message: str, *, source: str | None = None, field: str | None = None):
        super().__init__(message)
        self.message = message
        self.source = source
        self.field = field

    def __str__(self) -> str:
        parts = [p for p in (self.source, self.field) if p]
        prefix = ": ".join(parts)
        return f"{prefix}: {self.message}" if prefix else self.message


class InputError(PlasticError):
    """The user's input (a file, a field, an option) is wrong."""

    exit_code = 2


class PortInUseError(InputError):
    """A port asked for (`--port`) is held by another process.  Its message holds PHRASE, which a parent
    that started the listener in a child process reads in the child's last line (plastic.local)."""

    PHRASE = "is in use by another process"

    def __init__(self, host: str, port: int):
        super().__init__(f"port {port} on {host} {self.PHRASE} (another local cluster? `plastic local status "
                         f"--port {port}`; or give another --port, 0 for any free one)")
        self.host, self.port = host, port


class AnnotationError(InputError):
    """A `plastic:Plasticity` (or fallback) annotation is invalid."""


class CatalogError(InputError):
    """An instance catalog is invalid."""


class TraceError(InputError):
    """A WfCommons trace is invalid."""


class WorkflowError(InputError):
    """A CWL document or job order is invalid."""


class PlanningError(InputError):
    """No plan satisfies the constraints; carries what binds."""

    def __init__(
        self,
        message: str,
        *,
        source: str | None = None,
        field: str | None = None,
        binding_constraint: str | None = None,
        cheapest_feasible_usd_per_hour: float | None = None,
    ):
        super().__init__(message, source=source, field=field)
        self.binding_constraint = binding_constraint
        self.cheapest_feasible_usd_per_hour = cheapest_feasible_usd_per_hour


class UnplaceableTaskError(PlanningError):
    """A task fits no instance type of the catalog (or not its pinned type)."""

    def __init__(self, message: str, *, task_id: str, source: str | None = None, field: str | None = None):
        super().__init__(message, source=source, field=field, binding_constraint="capacity")
        self.task_id = task_id


class BudgetExceededError(PlanningError):
    """Even the cheapest feasible plan costs more than the budget."""


class RunFailedError(PlasticError):
    """A workflow run ended without success (the workflow failed, or its infrastructure did)."""

    def __init__(self, message: str, *, run_id: str, source: str | None = None, exit_code: int = 1):
        super().__init__(message, source=source)
        self.run_id = run_id
        self.exit_code = exit_code


class ProviderError(PlasticError):
    """A cloud provider could not be reached or answered wrongly (not a capacity shortage: that is data,
    plastic.core.elastic.model.CapacityError)."""
