"""`python -m plastic.watch ...`: the same command as `plastic agent-watch` (plastic.cli_watch)."""

from plastic.cli_errors import run_command
from plastic.cli_watch import agent_watch

if __name__ == "__main__":
    run_command(agent_watch)
