"""Errors of plastic's Mesos driver, all under :class:`plastic.core.errors.PlasticError`."""

from __future__ import annotations

from plastic.core.errors import PlasticError


class MesosError(PlasticError):
    """A Mesos master answered a call with an error, or could not be reached.

    ``status_code`` is the HTTP status (None when no answer came back), ``body``
    the master's text/plain explanation, ``call_type`` the call that failed.
    """

    def __init__(
        self,
        message: str,
        *,
        status_code: int | None = None,
        body: str = "",
        call_type: str | None = None,
        url: str | None = None,
    ):
        super().__init__(message, source=f"mesos {call_type}" if call_type else "mesos")
        self.status_code = status_code
        self.body = body
        self.call_type = call_type
        self.url = url


class MesosConnectionError(MesosError):
    """No HTTP answer at all: refused, reset, timed out."""


class MesosAuthError(MesosError):
    """401 or 403 on SUBSCRIBE: wrong principal/secret or not authorised."""


class MesosUnavailableError(MesosError):
    """503: the master is recovering or has no leader yet."""


class MesosRedirectError(MesosError):
    """Too many 307 redirects, or a redirect without a usable Location."""


class MesosFrameworkError(MesosError):
    """The master sent an ERROR event (for instance "Framework failed over")."""


class OfferExpiredError(MesosError):
    """An ACCEPT or DECLINE named offers of an earlier connection; it was not sent.

    Offers die with the subscription that received them, so the driver drops such
    calls instead of replaying them after re-subscription.
    """


class DriverQueueFullError(MesosError):
    """Too many calls are waiting for the connection to come back."""


class DriverNotRunningError(MesosError):
    """A call was made on a driver that is not started, or already stopped."""


class MasterResolutionError(MesosError):
    """The master address could not be resolved (bad URL, ZooKeeper has no leader...)."""
