"""The `unified` command line: run a task, inspect capabilities, auth and sessions."""
