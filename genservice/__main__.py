"""`python -m genservice` runs the command line."""

import sys

from genservice.cli import main

sys.exit(main())
