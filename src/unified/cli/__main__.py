"""`python -m unified.cli`: the `unified` command without the console script."""

import sys

from unified.cli.main import main

sys.exit(main())
