"""``python -m autolax``: the command line (``autolax.cli``)."""

import sys

from autolax.cli import main

sys.exit(main())
