"""The plan: the annotations and catalogs it reads, traces' workloads, packing, sizing, the planner and its bound (pure)."""
