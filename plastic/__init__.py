"""plastic: plasticity for scientific workflows on hybrid clouds of on-demand and spot nodes."""

__version__ = "0.1.0"
