import sys

from autolax.cli import main

sys.exit(main())
