"""`unified serve SCRIPT` given a script it cannot play: the one error line says where the script is wrong and how.
It said "not a script this fake can play (1 validation error for Script)": the first line of pydantic's error,
which names neither the field nor the problem. (tests/foundation/test_cli_newcomer.py runs the command itself.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from unified._cli.serve import ServeError, _load
from unified.testing._scenario import Script


@pytest.mark.parametrize(
    ("script", "said"),
    [
        ('{"turns": [{"kind": "model", "text": 5}]}', "turns.0.model.text: Input should be a valid string"),
        ('{"turns": 5, "extra": 1}', "turns: Input should be a valid array (and 1 more)"),
        ("[1, 2]", "Input should be an object"),
    ],
)
def test_a_script_it_cannot_play_is_refused_saying_where_and_why(script: str, said: str, tmp_path: Path) -> None:
    path = tmp_path / "script.json"
    path.write_text(script)
    with pytest.raises(ServeError) as refused:
        _load(path, Script.from_file)
    assert str(refused.value) == f"{path}: not a script this fake can play ({said})"
