"""Short, one-line descriptions of user values for error messages."""

from __future__ import annotations


def type_name(value: object) -> str:
    """`null` for None (as YAML/JSON users call it), else the Python type's name."""
    return "null" if value is None else type(value).__name__


def show(value: object) -> str:
    """A one-line repr, cut at 60 characters."""
    try:
        text = repr(value)
    except ValueError:  # an integer too long to print
        text = f"<{type(value).__name__}>"
    return text if len(text) <= 60 else text[:57] + "..."
