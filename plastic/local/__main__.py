"""`python -m plastic.local ...`: the `plastic local` commands without the rest of the CLI."""

from plastic.local.cli import main

if __name__ == "__main__":
    main()
