"""YAML parsing for cassettes and scripts, with libyaml's C parser when PyYAML was built with it.

The pure-Python parser reads a recorded cassette about 10x slower (seconds for the shipped set);
both build the same plain data.
"""

from __future__ import annotations

from typing import Any

__all__ = ["load_yaml"]


def load_yaml(text: str) -> Any:
    import yaml

    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
