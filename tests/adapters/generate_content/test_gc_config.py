"""`generation_config`: one shared config object per set of settings, whose key covers every option it reads."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from unified._adapters.generate_content import _client
from unified._adapters.generate_content._client import CONFIG_OPTIONS, generation_config
from unified._adapters.generate_content._options import GenerateContentOptions, ThinkingPlan
from unified._agent_loop import Declarations

_DECLARATIONS = Declarations(
    json.dumps([{"name": "read_file", "description": "Read a file.", "parameters": {"type": "object"}}])
)


def _settings() -> dict[str, Any]:
    return {
        "system_instruction": "be brief",
        "declarations": _DECLARATIONS,
        "thinking": ThinkingPlan(budget=128),
        "invocations": False,
    }


def _config(options: GenerateContentOptions, **changes: Any) -> object:
    return generation_config(options, **{**_settings(), **changes})


def test_the_same_settings_give_the_same_config_object() -> None:
    assert _config(GenerateContentOptions()) is _config(GenerateContentOptions())


@pytest.mark.parametrize(
    "changes",
    [
        {"system_instruction": "be long"},
        {"declarations": Declarations()},
        {"thinking": ThinkingPlan(budget=256)},
        {"thinking": None},
        {"invocations": True},
    ],
)
def test_other_settings_give_another_config(changes: dict[str, Any]) -> None:
    base = _config(GenerateContentOptions())
    other = _config(GenerateContentOptions(), **changes)
    assert other is not base
    assert other != base


@pytest.mark.parametrize(
    "option",
    [
        {"temperature": 0.3},
        {"max_output_tokens": 12},
        {"google_search": True},
        {"url_context": True},
        {"code_execution": True},
        {"google_maps": True},
        {"function_calling": {"mode": "any"}},
        {"user_location": {"latitude": 1.5, "longitude": 2.5}},
        {"file_search": {"store_names": ["s"]}},
    ],
)
def test_each_option_the_config_reads_changes_it(option: dict[str, Any]) -> None:
    base = _config(GenerateContentOptions())
    changed = _config(GenerateContentOptions.model_validate(option))
    assert changed is not base
    assert changed != base


def test_the_cache_key_names_every_option_the_module_reads() -> None:
    """A new option read by `_client.py` but missing from the key would give runs a stale config."""
    source = Path(_client.__file__).read_text()
    read = set(re.findall(r"\boptions\.(\w+)", source)) - {"model_dump_json"}
    assert read == set(CONFIG_OPTIONS)
