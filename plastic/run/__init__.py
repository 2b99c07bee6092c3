"""`plastic run`: plan, start a cluster and Redis, run the workflow through Toil on plastic, report."""
