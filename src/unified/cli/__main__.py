"""`python -m unified.cli`: the `unified` command without the console script."""

from unified.cli.main import app

app(prog_name="unified")
