"""Where plastic keeps its state on this machine: ``$PLASTIC_HOME``, else ``$XDG_STATE_HOME/plastic`` or
``~/.local/state/plastic`` (the embedded Redis, submitted job orders, runs whose own directory's path
Toil cannot run from).  Its own module: the runner, the service and the CLI all need it, and none of
them should import another for it."""

from __future__ import annotations

import os
from pathlib import Path

HOME_ENV = "PLASTIC_HOME"


def plastic_home() -> Path:
    if os.environ.get(HOME_ENV):
        return Path(os.environ[HOME_ENV]).expanduser().resolve()
    state = os.environ.get("XDG_STATE_HOME") or os.path.expanduser("~/.local/state")
    return Path(state) / "plastic"
