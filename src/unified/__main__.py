"""`python -m unified`: the command line, as the `unified` script runs it (its exit code too)."""

from unified._cli.main import main

raise SystemExit(main())
