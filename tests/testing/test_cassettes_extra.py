"""A plain install has no vcrpy or PyYAML: using a cassette then says, in one line, what to install."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from unified.errors import ConfigurationError
from unified.testing import Script, use_cassette
from unified.testing._yaml import CASSETTES_EXTRA


@pytest.fixture
def without_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [m for m in sys.modules if m == "vcr" or m.startswith(("vcr.", "yaml"))]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "vcr", None)  # a None entry makes `import vcr` raise ImportError
    monkeypatch.setitem(sys.modules, "yaml", None)


@pytest.mark.usefixtures("without_the_extra")
def test_a_cassette_without_vcrpy_names_the_extra(tmp_path: Path) -> None:
    (tmp_path / "any.yaml").write_text("interactions: []\nversion: 1\n")
    with pytest.raises(ConfigurationError) as caught, use_cassette(tmp_path, "any"):
        pass
    assert "vcrpy" in caught.value.message
    assert caught.value.hint == CASSETTES_EXTRA
    assert "\n" not in str(caught.value)


@pytest.mark.usefixtures("without_the_extra")
def test_a_yaml_script_without_pyyaml_names_the_extra(tmp_path: Path) -> None:
    script = tmp_path / "turns.yaml"
    script.write_text("turns: []\n")
    with pytest.raises(ConfigurationError, match="PyYAML") as caught:
        Script.from_file(script)
    assert caught.value.hint == CASSETTES_EXTRA
