"""`python -m plastic`: the same as the `plastic` command."""

from plastic.cli import main

main()
