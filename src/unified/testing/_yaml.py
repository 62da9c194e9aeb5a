"""The cassettes extra (vcrpy, PyYAML), imported only when a cassette or a YAML script is used.

`unified run` and a plain install need neither; when one is missing, the error says so in one
line and names the extra. YAML is parsed with libyaml's C parser when PyYAML was built with it
(the pure-Python parser reads a recorded cassette about 10x slower); both build the same data.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

from unified.errors import ConfigurationError

__all__ = ["CASSETTES_EXTRA", "import_extra", "load_yaml"]

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


def load_yaml(text: str, purpose: str = "reading YAML") -> Any:
    yaml = import_extra("yaml", purpose)
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
