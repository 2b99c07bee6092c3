"""`python -m plastic.cli ...`: the `plastic` command."""

from plastic.cli import main

main()
