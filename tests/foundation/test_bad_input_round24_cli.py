"""Bad input round 24, the command line and the environment: a current directory deleted under the process, a
`--cwd` with `~` no shell expanded, `--prefix ''`, a session store URL of bytes that are not UTF-8, and YAML
scripts and cassettes that PyYAML cannot read or whose aliases never end. Each case says what happened before.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.foundation.test_cli_errors import EXIT_BAD_INPUT, _assert_one_error_line
from tests.harness.cli_main import in_process
from unified import ExecuteParams
from unified.errors import ConfigurationError

# --- a current directory that no longer exists ----------------------------------------------------------------------


@pytest.fixture
def gone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This process's current directory, deleted (put back to the test's own afterwards by `monkeypatch`)."""
    place = tmp_path / "gone"
    place.mkdir()
    monkeypatch.chdir(place)
    place.rmdir()
    return place


@pytest.mark.usefixtures("gone")
def test_run_in_a_deleted_directory_is_one_line_saying_so(capsys: pytest.CaptureFixture[str]) -> None:
    """FAILED before: "unexpected FileNotFoundError: [Errno 2] No such file or directory (a bug in unified ...)",
    exit 70, from `Path.cwd()`."""
    done = in_process(capsys, "run", "hi", "--backend", "scripted")
    _assert_one_error_line(done, EXIT_BAD_INPUT, "the current directory no longer exists", "cd into an existing")


@pytest.mark.usefixtures("gone")
def test_a_relative_cwd_in_a_deleted_directory_is_one_line_too(capsys: pytest.CaptureFixture[str]) -> None:
    """FAILED before: the same exit 70, from `Path("sub").resolve()`."""
    done = in_process(capsys, "run", "hi", "--backend", "scripted", "--cwd", "sub")
    _assert_one_error_line(done, EXIT_BAD_INPUT, "the current directory no longer exists")


@pytest.mark.usefixtures("gone")
def test_execute_params_in_a_deleted_directory_is_a_configuration_error() -> None:
    """FAILED before: a bare FileNotFoundError out of pydantic's default factory (`Path.cwd`)."""
    with pytest.raises(ConfigurationError) as caught:
        ExecuteParams(prompt="hi")
    assert "the current directory no longer exists" in caught.value.message
    assert "name the run's directory (cwd, --cwd)" in str(caught.value)


def test_execute_params_given_a_cwd_needs_no_current_directory(gone: Path, tmp_path: Path) -> None:
    """Pin: a run that names its directory runs wherever the process is."""
    assert ExecuteParams(prompt="hi", cwd=tmp_path).cwd == tmp_path
    assert not gone.exists()


# --- `--cwd` with `~` -----------------------------------------------------------------------------------------------


def test_a_quoted_tilde_in_cwd_is_the_home_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """FAILED before: `--cwd '~/proj'` (quoted, or `--cwd=~/proj`, which no shell expands) was resolved as
    `./~/proj` and refused as a directory that does not exist. Now it is the home's `proj`, as the library reads it
    (round 23)."""
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "proj").mkdir()
    monkeypatch.chdir(tmp_path / "proj")
    done = in_process(capsys, "run", "hi", "--backend", "scripted", "--cwd", "~/proj", "--json")
    assert done.returncode == 0, done.stderr
    assert f'"cwd":"{tmp_path / "proj"}"' in done.stdout


def test_an_unknown_users_home_in_cwd_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    """FAILED before: "cwd <here>/~nobody-unified-24/x does not exist", a directory nobody named."""
    done = in_process(capsys, "run", "hi", "--backend", "scripted", "--cwd", "~nobody-unified-24/x")
    _assert_one_error_line(done, EXIT_BAD_INPUT, "the home directory of '~nobody-unified-24' is not known here")


# --- `unified install --prefix ''` ----------------------------------------------------------------------------------


@pytest.mark.parametrize("command", [("install", "codex"), ("install-gemini",), ("install-claude-code",)])
def test_an_empty_install_prefix_is_refused_before_npm_runs(
    command: tuple[str, ...], tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """FAILED before: `--prefix ''` (`--prefix "$DIR"` with DIR unset) was `.`: npm installed the binary into the
    current directory (measured: codex's node_modules made in the shell's directory, exit 0). Here no npm is on PATH,
    so before it failed on that instead."""
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    monkeypatch.setenv("PATH", str(here))
    done = in_process(capsys, *command, "--prefix", "")
    _assert_one_error_line(done, EXIT_BAD_INPUT, "Invalid value for '--prefix': the folder's name is empty")
    assert list(here.iterdir()) == []


# --- a session store URL of bytes that are not UTF-8 ----------------------------------------------------------------


def test_a_store_url_of_bytes_that_are_not_utf8_is_said_so(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """FAILED before: `unified sessions list` ended "unexpected UnicodeEncodeError: 'utf-8' codec can't encode
    character '\\udcff' ... (a bug in unified ...)", exit 70 (percent-decoding the URL)."""
    monkeypatch.setenv("UNIFIED_SESSION_STORE_URL", "file:///tmp/store-\udcff")
    done = in_process(capsys, "sessions", "list")
    assert done.returncode == 1, done.stderr
    assert "the session store URL holds bytes that are not UTF-8 ('file:///tmp/store-\\udcff')" in done.stderr
    assert "bug in unified" not in done.stderr


def test_the_library_refuses_such_a_url_as_a_configuration_error() -> None:
    """FAILED before: the UnicodeEncodeError itself."""
    from unified._sessions.config import store_from_url

    with pytest.raises(ConfigurationError, match="holds bytes that are not UTF-8"):
        store_from_url("postgresql://user:\udcff@host/db")


# --- YAML scripts and cassettes -------------------------------------------------------------------------------------

_BOMB = "\n".join(
    ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    + [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)]
    + ["turns:", "  - kind: model", "    text: hi", "    grounding: {x: *a9}"]
)
"""538 bytes whose aliases make 9^10 lists: a valid script to the eye."""

MALFORMED = {
    "unclosed": ("turns: [\n", ":2: malformed YAML: did not find expected node content (column 1)"),
    "tab": ("turns:\n\t- text: hi\n", ":2: malformed YAML: found character that cannot start any token (column 1)"),
    "python-tag": ("!!python/object:os.system {}\n", ":1: malformed YAML: could not determine a constructor for the"),
    "deep": ("turns: " + "[" * 2_000 + "]" * 2_000 + "\n", ":1: malformed YAML: exceeded maximum nesting depth"),
    "alias-bomb": (_BOMB, ": malformed YAML: its aliases (*name) make it more than 100,000 mappings and lists"),
    "alias-cycle": ("a: &a [1, *a]\nturns: []\n", ": malformed YAML: its aliases (*name) make it more than"),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_serve_of_a_script_pyyaml_cannot_read_is_one_line(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """FAILED before: the first four ended "unexpected ParserError/ScannerError/ConstructorError ... (a bug in
    unified ...)", exit 70 (only `unified replay` read PyYAML's errors); the alias bomb held the CPU past 30 s in
    pydantic's validation (killed), and the cycle was taken. Now one line naming the file, its line and the problem,
    before anything listens."""
    text, said = MALFORMED[case]
    script = tmp_path / "script.yaml"
    script.write_text(text)
    done = in_process(capsys, "serve", str(script))
    _assert_one_error_line(done, EXIT_BAD_INPUT, f"{script}{said}", "fix the script")


@pytest.mark.parametrize("case", ["alias-bomb", "alias-cycle"])
def test_replay_of_a_cassette_whose_aliases_never_end_is_one_line(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """FAILED before: taken, and then "not a cassette of the expected shape" or a walk of the cycle; now the same
    line as `serve`'s."""
    cassette = tmp_path / "run.yaml"
    cassette.write_text(MALFORMED[case][0].replace("turns:", "interactions:"))
    done = in_process(capsys, "replay", str(cassette))
    _assert_one_error_line(done, EXIT_BAD_INPUT, f"{cassette}: malformed YAML: its aliases (*name) make it more")


def test_the_test_kit_refuses_a_script_whose_aliases_never_end(tmp_path: Path) -> None:
    """FAILED before: `Script.from_file` (what a test's `FakeGemini` plays) ran past 30 s on the bomb."""
    from unified.testing import Script
    from unified.testing._yaml import MalformedYaml

    script = tmp_path / "script.yaml"
    script.write_text(_BOMB)
    with pytest.raises(MalformedYaml, match="its aliases"):
        Script.from_file(script)


def test_a_script_that_shares_a_little_still_loads(tmp_path: Path) -> None:
    """Pin: an alias or two (a turn's grounding reused) is YAML as written by hand, and loads."""
    from unified.testing import Script

    script = tmp_path / "script.yaml"
    script.write_text(
        "turns:\n  - {kind: model, text: a, grounding: &g {webSearchQueries: [x]}}\n"
        "  - {kind: model, text: b, grounding: *g}\n"
    )
    loaded = Script.from_file(script)
    assert [turn.grounding for turn in loaded.turns] == [{"webSearchQueries": ["x"]}] * 2  # type: ignore[union-attr]


# --- JSON scripts ---------------------------------------------------------------------------------------------------

_RECORDED = '{"method": "generateContent", "response": {"candidates": []}}'


@pytest.mark.parametrize(
    ("name", "text"),
    [("script.json", '{"turns": [{"kind": "model", "text": "hi"}]}'), ("script.responses", _RECORDED + "\n")],
    ids=["json", "responses"],
)
def test_a_script_saved_with_a_byte_order_mark_plays(name: str, text: str, tmp_path: Path) -> None:
    """FAILED before: a `.json` script an editor saved with a BOM was "Invalid JSON: expected value at line 1 column
    1" and a `.responses` one "Unexpected UTF-8 BOM", where the same script in YAML played (and a replayed
    transcript's BOM is read past)."""
    from unified.testing import Script

    script = tmp_path / name
    script.write_bytes(b"\xef\xbb\xbf" + text.encode())
    assert len(Script.from_file(script).turns) == 1


@pytest.mark.parametrize(
    ("third", "said"),
    [
        ('{"method": oops}', "(line 3, column 12: not JSON (Expecting value))"),
        ("[1, 2]", "(line 3: Input should be a valid dictionary or instance of RecordedTurn)"),
    ],
    ids=["not-json", "not-a-turn"],
)
def test_a_bad_line_of_a_recording_is_named_by_its_number(
    third: str, said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """FAILED before: "Expecting value: line 1 column 12 (char 11)" of line 3 (each line is parsed alone), and
    pydantic's words with no line at all."""
    script = tmp_path / "run.responses"
    script.write_text(f"{_RECORDED}\n{_RECORDED}\n{third}\n")
    done = in_process(capsys, "serve", str(script))
    _assert_one_error_line(done, EXIT_BAD_INPUT, f"{script}: not a script this fake can play {said}")


@pytest.mark.usefixtures("gone")
def test_a_relative_data_dir_in_a_deleted_directory_is_said_so(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """FAILED before: `unified sessions list` with `UNIFIED_DATA_DIR=rel` ended "unexpected FileNotFoundError ... (a
    bug in unified ...)", exit 70 (the store's root and codex's home made absolute against the deleted directory).
    Now the backends whose sessions are under it are said not available, and why."""
    monkeypatch.setenv("UNIFIED_DATA_DIR", "rel")
    done = in_process(capsys, "sessions", "list")
    assert "bug in unified" not in done.stderr
    assert "are not available: the current directory no longer exists" in done.stderr


@pytest.mark.usefixtures("gone")
def test_a_relative_store_root_in_a_deleted_directory_is_a_configuration_error() -> None:
    """FAILED before: a bare FileNotFoundError from `Path.absolute()`."""
    from unified.sessions import FileSessionStore

    with pytest.raises(ConfigurationError, match="the current directory no longer exists"):
        FileSessionStore("sessions")
