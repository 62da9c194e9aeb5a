"""`backend_options.policy` of the API backends: a `unified.tools.Policy`, checked without loading the tool
runtime (a module above the options: it is imported by whoever made the policy, or not needed)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from pydantic import ValidationError

from unified._adapters.generate_content._options import GenerateContentOptions
from unified._adapters.interactions._options import InteractionsOptions
from unified.tools import Policy

OPTIONS = [GenerateContentOptions, InteractionsOptions]


@pytest.mark.parametrize("options", OPTIONS)
def test_a_policy_is_taken_and_anything_else_is_refused_by_name(options: type[GenerateContentOptions]) -> None:
    policy = Policy.default().with_toml('[[rule]]\ntoolName = "delegate"\ndecision = "deny"\n')
    assert options.model_validate({"policy": policy}).policy is policy
    assert options.model_validate({}).policy is None
    for wrong in ({"rules": []}, "deny", object()):
        with pytest.raises(ValidationError, match=r"policy must be a unified\.tools\.Policy \(got "):
            options.model_validate({"policy": wrong})


@pytest.mark.e2e  # a fresh interpreter: this one has the tool runtime loaded
def test_refusing_a_policy_that_is_none_does_not_load_the_tool_runtime() -> None:
    script = (
        "import sys\n"
        "from unified._adapters.generate_content._options import GenerateContentOptions\n"
        "try:\n"
        "    GenerateContentOptions.model_validate({'policy': {'rules': []}})\n"
        "except ValueError as exc:\n"
        "    assert 'must be a unified.tools.Policy' in str(exc), exc\n"
        "else:\n"
        "    raise SystemExit('taken')\n"
        "print(sorted(m for m in sys.modules if m.startswith('unified.tools')))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"  # it was the whole runtime (~0.2 s), loaded to say no
