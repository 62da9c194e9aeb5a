"""The backends `unified demo` runs, as data that any Python reads without unified installed.

`scripts/demo` runs this file with the system Python to refuse a bad `--backend` before setup (a
fresh clone's setup takes minutes); `unified demo` takes its choices from the same tuple. A backend
joins the demo here and in the wiring of `unified._cli.demo`. No imports beyond the standard
library, and nothing newer than Python 3.6, on purpose.
"""

import sys

__all__ = ["DEMO_BACKENDS", "check_arguments", "not_one_of"]

DEMO_BACKENDS = ("gemini-cli", "generate-content", "interactions", "claude-code", "codex")


def not_one_of(value, choices):  # type: (str, tuple[str, ...]) -> str
    """Why `value` is refused, naming the choice nearest to it: `claude` or `generate-contnet` listed every
    backend, leaving the reader to spot the one meant (bad input round 21). Here, not in the CLI, because
    `scripts/demo` refuses a bad `--backend` with this file alone, and every `--backend` says it alike."""
    import difflib  # only for this message: the CLI's start loads nothing it does not use

    folded = {choice.lower(): choice for choice in choices}
    near = difflib.get_close_matches(value.strip().lower(), list(folded), n=1)
    guess = f" (did you mean {folded[near[0]]!r}?)" if near else ""
    return "{!r} is not one of: {}{}".format(value, ", ".join(choices), guess)


def check_arguments(argv):  # type: (list[str]) -> str | None
    """Why the demo's `--backend` value in `argv` is not one it runs, or None (other options are typer's)."""
    choices = ("all", *DEMO_BACKENDS)
    for index, arg in enumerate(argv):
        if arg == "--":
            return None
        if arg == "--backend" or arg.startswith("--backend="):
            value = arg.partition("=")[2] if "=" in arg else (argv[index + 1] if index + 1 < len(argv) else None)
            if value is None:
                return "Option '--backend' requires an argument."
            if value not in choices:
                return "Invalid value for '--backend': " + not_one_of(value, choices)
    return None


if __name__ == "__main__":
    problem = check_arguments(sys.argv[1:])
    if problem is not None:
        sys.stderr.write(f"error: {problem} (see `unified demo --help`)\n")
        sys.exit(2)
