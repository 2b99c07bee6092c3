"""The functional core: pure functions over frozen values (standard library only)."""
