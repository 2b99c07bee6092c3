"""`plastic agent-watch`: a spot-notice watcher for one machine (IMDS -> the notices stream in Redis).

- `imds`: the instance metadata client (IMDSv2 tokens, v1 fallback) and the notice documents' parsing.
- `watcher`: `AgentWatcher`, the polling loop that publishes each notice once.
- the command itself: plastic.cli.watch (also `python -m plastic.watch`).
"""
