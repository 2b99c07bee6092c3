"""bench/wfgen.py: synthetic WfCommons workflows of other shapes, to check the elastic targets on traces
that are not in the repository (issue "Elastic, part two": tune nothing to the five bundled traces).

WfCommons' workflow generator (its wfchef recipes, built from real executions of each application)
writes instances in the same WfFormat that plastic reads.  It is not a dependency of plastic (it
brings numpy, scipy, pandas, networkx and matplotlib), so this script runs with a Python of its own
and imports nothing from plastic:

    python3 -m venv /tmp/wfgen-venv && /tmp/wfgen-venv/bin/pip install 'wfcommons==1.6'
    /tmp/wfgen-venv/bin/python bench/wfgen.py --out /tmp/wfgen-traces
    .venv/bin/python bench/elastic.py --trace-dir /tmp/wfgen-traces

Each recipe is generated with a fixed seed (Python's and numpy's random), so the same wfcommons
version gives the same tasks, edges, runtimes and cores (the file names and timestamps inside vary).
`num_tasks` is an upper bound for a recipe: a recipe's smallest base graph may be larger.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

# (recipe class name in wfcommons.wfchef.recipes, tasks at most, seed)
RECIPES = (
    ("EpigenomicsRecipe", 250, 11),
    ("CyclesRecipe", 220, 12),
    ("SeismologyRecipe", 203, 13),
    ("SoykbRecipe", 180, 14),
    ("SrasearchRecipe", 106, 15),
    ("GenomeRecipe", 250, 16),
    ("BwaRecipe", 106, 17),
    ("RnaseqRecipe", 66, 18),
    ("MontageRecipe", 312, 19),
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True, help="directory for the generated instances (JSON)")
    ap.add_argument("--only", help="comma-separated recipe names (e.g. Seismology,Srasearch)")
    args = ap.parse_args()
    try:
        import numpy as np
        from wfcommons import WorkflowGenerator
        from wfcommons.wfchef import recipes
    except ImportError as exc:
        raise SystemExit(f"bench/wfgen.py needs wfcommons ({exc}): see the module's docstring") from None
    only = {n.strip().lower() for n in args.only.split(",")} if args.only else None
    args.out.mkdir(parents=True, exist_ok=True)
    for class_name, tasks, seed in RECIPES:
        short = class_name.removesuffix("Recipe").lower()
        if only is not None and short not in only:
            continue
        random.seed(seed)
        np.random.seed(seed)
        recipe = getattr(recipes, class_name).from_num_tasks(num_tasks=tasks)
        workflow = WorkflowGenerator(recipe).build_workflow()
        workflow.name = f"{short}-synthetic-{tasks}-s{seed}"
        path = args.out / f"{workflow.name}.json"
        workflow.write_json(path)
        doc = json.loads(path.read_text())
        spec = doc["workflow"]["specification"]
        edges = sum(len(t.get("parents", ())) for t in spec["tasks"])
        print(f"{path}: {len(spec['tasks'])} tasks, {edges} edges (WfFormat {doc['schemaVersion']})")


if __name__ == "__main__":
    main()
