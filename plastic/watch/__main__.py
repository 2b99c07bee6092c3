"""`python -m plastic.watch ...`: the same command as `plastic agent-watch` (plastic.cli.watch)."""

from plastic.cli.error_exit import run_command
from plastic.cli.watch import agent_watch

if __name__ == "__main__":
    run_command(agent_watch)
