"""`python -m unified`: the command line, as the `unified` script runs it."""

from unified._cli.main import main

main()
