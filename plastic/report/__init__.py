"""The report's renderers, above the core (plastic.core.account computes what they show): a run directory
read into its picture (picture.py), the picture as an HTML page (html.py) with its SVG drawings (svg.py),
and the terminal's view of a run (view.py: the live progress panel, the report table with the node
timeline, a failed run's error)."""
