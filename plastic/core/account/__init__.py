"""The run's account: its report, its picture, its live progress and what each step used, folded from its records (pure)."""
