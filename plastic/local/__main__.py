"""`python -m plastic.local ...`: the `plastic local` commands without the rest of the CLI."""

from plastic.cli.local import main

if __name__ == "__main__":
    main()
