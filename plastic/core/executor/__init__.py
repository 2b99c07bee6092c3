"""plastic's Mesos executor's decisions: its messages, its book and the share of an agent it holds (pure)."""
