"""`python -m unified`: the command line, as the `unified` script runs it (same exit codes)."""

from unified._cli.main import main

raise SystemExit(main())
