"""`backend_options.policy` of every backend (`PolicyOption`): a `unified.tools.Policy`, checked without loading the
tool runtime (a package above the options: it is imported by whoever made the policy, or not needed)."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
from pydantic import ValidationError

from unified._adapters.claude_code._options import ClaudeCodeOptions
from unified._adapters.codex._options import CodexOptions
from unified._adapters.gemini_cli._options import GeminiCliOptions
from unified._adapters.generate_content._options import GenerateContentOptions
from unified._adapters.interactions._options import InteractionsOptions
from unified.tools import Policy

OPTIONS = [GenerateContentOptions, InteractionsOptions, GeminiCliOptions, ClaudeCodeOptions, CodexOptions]


@pytest.mark.parametrize("options", OPTIONS)
def test_a_policy_is_taken_and_anything_else_is_refused_by_name(options: type[Any]) -> None:
    policy = Policy.default().with_toml('[[rule]]\ntoolName = "delegate"\ndecision = "deny"\n')
    taken = options.model_validate({"policy": policy})
    assert taken.policy is policy
    assert "policy" not in repr(taken)  # the caller's rules, and long
    assert "policy" not in taken.model_dump()
    assert options.model_validate({}).policy is None
    for wrong in ({"rules": []}, "deny", object()):
        with pytest.raises(ValidationError, match=r"policy must be a unified\.tools\.Policy \(got "):
            options.model_validate({"policy": wrong})


@pytest.mark.e2e  # a fresh interpreter: this one has the tool runtime loaded
@pytest.mark.parametrize("options", ["generate_content._options.GenerateContentOptions", "codex._options.CodexOptions"])
def test_refusing_a_policy_that_is_none_does_not_load_the_tool_runtime(options: str) -> None:
    module, name = options.rsplit(".", 1)
    script = (
        "import sys\n"
        f"from unified._adapters.{module} import {name}\n"
        "try:\n"
        f"    {name}.model_validate({{'policy': {{'rules': []}}}})\n"
        "except ValueError as exc:\n"
        "    assert 'must be a unified.tools.Policy' in str(exc), exc\n"
        "else:\n"
        "    raise SystemExit('taken')\n"
        "print(sorted(m for m in sys.modules if m.startswith('unified.tools')))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"  # it was the whole runtime (~0.2 s), loaded to say no
