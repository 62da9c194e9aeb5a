"""`python -m unified._cli`: the `unified` command without the console script."""

import sys

from unified._cli.main import main

sys.exit(main())
