"""`python -m plastic.executor [OPTIONS]`: the same as `plastic executor [OPTIONS]`."""

import sys

from plastic.cli import main

if __name__ == "__main__":
    sys.argv = ["plastic", "executor", *sys.argv[1:]]
    main()
