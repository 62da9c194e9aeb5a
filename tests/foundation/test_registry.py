"""The backend registry: production backends built in, the scripted test backend joining from outside."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.hang_guard import HANG_GUARD_S
from unified import backends as registry
from unified.errors import ConfigurationError

SRC = Path(__file__).resolve().parents[2] / "src"


def test_the_production_registry_does_not_name_the_testing_package() -> None:
    assert "unified.testing" not in (SRC / "unified" / "backends.py").read_text()
    assert set(registry.built_in_backends()) == {
        "gemini-cli",
        "generate-content",
        "interactions",
        "claude-code",
        "codex",
    }


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


def test_the_scripted_backend_joins_through_its_entry_point_alone() -> None:
    from unified.testing._scripted import BACKEND_ENTRY

    registry._entry_point_backends.cache_clear()
    assert "scripted" not in registry._registered
    assert registry.known_backends()["scripted"] == BACKEND_ENTRY
    factory = registry.load_backend_factory("scripted")
    assert factory.__module__ == "unified.testing._scripted"
    assert "scripted" not in registry.session_backends()


def test_a_registered_backend_brings_its_session_locator(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "_registered", {})
    registry.register_backend(
        "echo", "tests.foundation.test_registry:_no_backend", sessions="tests.foundation.test_registry:_no_sessions"
    )
    assert registry.known_backends()["echo"] == registry.BackendEntry(
        "echo", "tests.foundation.test_registry:_no_backend", "tests.foundation.test_registry:_no_sessions"
    )
    assert "echo" in registry.session_backends()
    assert registry.load_backend_factory("echo") is _no_backend
    with pytest.raises(LookupError, match="echo keeps nothing"):
        registry.load_session_locator("echo")


def test_a_backend_without_sessions_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "_registered", {})
    registry.register_backend("silent", "tests.foundation.test_registry:_no_backend")
    with pytest.raises(ConfigurationError, match="keeps no sessions"):
        registry.load_session_locator("silent")


def _no_backend(params: object) -> object:
    raise AssertionError("not run in these tests")


def _no_sessions(store: object) -> object:
    raise LookupError("echo keeps nothing")


def test_a_built_in_name_cannot_be_taken_over() -> None:
    with pytest.raises(ConfigurationError, match="built in"):
        registry.register_backend("gemini-cli", "somewhere.else:create_backend")


def test_an_unknown_backend_names_the_known_ones() -> None:
    with pytest.raises(ConfigurationError) as caught:
        registry.load_backend_factory("claude")
    assert "gemini-cli" in (caught.value.hint or "")
