"""The backend registry: production backends built in, the scripted test backend joining from outside."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.hang_guard import HANG_GUARD_S
from unified import backends as registry
from unified._errors import ConfigurationError

SRC = Path(__file__).resolve().parents[2] / "src"


def test_the_production_registry_does_not_name_the_testing_package() -> None:
    assert "unified.testing" not in (SRC / "unified" / "backends.py").read_text()
    assert set(registry.BACKENDS) == {"gemini-cli", "generate-content", "interactions"}


@pytest.mark.e2e  # runs a real subprocess
def test_loading_a_production_backend_does_not_import_the_testing_package() -> None:
    code = (
        "import sys\n"
        "from unified.backends import load_backend_factory\n"
        "load_backend_factory('gemini-cli')\n"
        "print(sorted(m for m in sys.modules if m.startswith('unified.testing')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=HANG_GUARD_S
    )
    assert done.stdout.strip() == "[]"


def test_importing_unified_testing_registers_the_scripted_backend() -> None:
    import unified.testing  # noqa: F401 -- the import is what registers it

    factory = registry.load_backend_factory("scripted")
    assert factory.__module__ == "unified.testing.scripted"
    assert registry.known_backends()["scripted"] == "unified.testing.scripted:create_backend"


def test_a_built_in_name_cannot_be_taken_over() -> None:
    with pytest.raises(ConfigurationError, match="built in"):
        registry.register_backend("gemini-cli", "somewhere.else:create_backend")


def test_an_unknown_backend_names_the_known_ones() -> None:
    with pytest.raises(ConfigurationError) as caught:
        registry.load_backend_factory("claude")
    assert "gemini-cli" in (caught.value.hint or "")
