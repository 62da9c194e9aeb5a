"""The cassettes extra (vcrpy, PyYAML), imported only when a cassette or a YAML script is used.

`unified run` and a plain install need neither; when one is missing, the error says so in one
line and names the extra. YAML is parsed with libyaml's C parser when PyYAML was built with it
(the pure-Python parser reads a recorded cassette about 10x slower); both build the same data.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

from unified import _limits as limits
from unified.errors import ConfigurationError

__all__ = ["CASSETTES_EXTRA", "MalformedYaml", "import_extra", "load_yaml"]

CASSETTES_EXTRA = "pip install 'unified[cassettes]'"


def import_extra(module: str, purpose: str) -> ModuleType:
    """`module` of the cassettes extra, or a ConfigurationError that says how to install it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        distribution = {"vcr": "vcrpy", "yaml": "PyYAML"}.get(module.partition(".")[0], module)
        raise ConfigurationError(
            f"{purpose} needs {distribution}, which a plain install of unified leaves out", hint=CASSETTES_EXTRA
        ) from None


class MalformedYaml(ValueError):
    """YAML that PyYAML cannot read (`yaml.YAMLError`), said in one line: what, and where (`line`, 1-based, None
    when PyYAML did not say). A ValueError, as the other refusals of what a file holds are."""

    def __init__(self, problem: str, line: int | None, column: int | None) -> None:
        self.problem = problem
        self.line = line
        self.column = f" (column {column})" if column else ""
        super().__init__(f"malformed YAML{f' at line {line}' if line else ''}: {problem}{self.column}")

    def at(self, path: object) -> str:
        """The line an error message gives of the file at `path`: `PATH:LINE: malformed YAML: PROBLEM (column C)`."""
        where = f"{path}:{self.line}" if self.line else str(path)
        return f"{where}: malformed YAML: {self.problem}{self.column}"


def load_yaml(text: str, purpose: str = "reading YAML") -> Any:
    """`text` parsed by PyYAML's safe loader, or a `MalformedYaml` (`unified serve` of a script with a YAML syntax
    error, a tab, an unknown tag or 1,000 nested brackets ended "unexpected ParserError ... (a bug in unified ...)",
    exit 70: only `unified replay` read PyYAML's errors, round 24)."""
    yaml = import_extra("yaml", purpose)
    try:
        data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = str(getattr(exc, "problem", None) or exc).strip().splitlines()[0]
        line, column = (mark.line + 1, mark.column + 1) if mark is not None else (None, None)
        raise MalformedYaml(problem, line, column) from None
    if "*" in text:  # an alias, maybe: what it names is shared, and counted as often as it is reached
        _refuse_alias_bombs(data)
    return data


def _refuse_alias_bombs(data: Any) -> None:
    """A `MalformedYaml` when `data`, its aliases followed, holds more than `MAX_JSON_CONTAINERS` mappings and lists.

    An alias is a reference: ten lines of `&a9 [*a8, *a8, ...]` (538 bytes) parse at once into a list that, walked,
    is 9^10 lists; `unified serve` of such a script held the CPU past 30 s in pydantic's validation of it (and its
    JSON would never have been written), and an alias of a list inside itself is a cycle no walk ends (round 24).
    The walk stops at the bound: at most `MAX_JSON_CONTAINERS` steps."""
    left = limits.MAX_JSON_CONTAINERS
    stack = [data]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            stack += value.values()
        elif isinstance(value, list):
            stack += value
        else:
            continue
        left -= 1
        if left < 0:
            raise MalformedYaml(
                f"its aliases (*name) make it more than {limits.MAX_JSON_CONTAINERS:,} mappings and lists, or a "
                "cycle; write the values out, or share less",
                None,
                None,
            )
