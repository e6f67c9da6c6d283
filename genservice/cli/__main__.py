"""`python -m genservice.cli` runs the command line, as `python -m genservice` does."""

import sys

from genservice.cli import main

sys.exit(main())
