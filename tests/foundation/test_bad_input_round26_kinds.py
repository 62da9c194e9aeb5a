"""Bad input round 26, new kinds: each case names what happened before (FAILED before) or is a pin of what was right."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.foundation.test_cli_errors import EXIT_BAD_INPUT, _assert_one_error_line
from tests.harness.cli_main import in_process
from unified.errors import ConfigurationError
from unified.sessions import FileSessionStore
from unified.types import Fallback

NOBODY = "~no-such-user-bad26/data"
"""A folder under the home of a user no machine has."""

# --- 1. a folder setting under an unknown user's home ----------------------------------------------------------------


def test_a_data_dir_under_an_unknown_users_home_is_said_so(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """FAILED before: `unified sessions list` ended "unexpected RuntimeError: Could not determine home directory. (a
    bug in unified ...)", exit 70. Now the stores that live there say why they are not listed, and the rest are."""
    monkeypatch.setenv("UNIFIED_DATA_DIR", NOBODY)
    done = in_process(capsys, "sessions", "list")
    assert "unexpected" not in done.stderr
    assert done.returncode == 0, done.stderr
    assert "the home directory of '~no-such-user-bad26' is not known here" in done.stderr
    assert "UNIFIED_DATA_DIR" in done.stderr


def test_a_store_root_under_an_unknown_users_home_is_a_configuration_error() -> None:
    """FAILED before: a bare RuntimeError from pathlib."""
    with pytest.raises(ConfigurationError, match="the home directory of '~no-such-user-bad26' is not known here"):
        FileSessionStore(NOBODY)


@pytest.mark.parametrize("name", ["UNIFIED_CODEX_HOME", "UNIFIED_DATA_DIR"])
def test_codex_home_under_an_unknown_users_home_names_the_variable(name: str) -> None:
    """FAILED before: the codex backend's set-up raised pathlib's bare RuntimeError."""
    from unified._adapters.codex._launch import codex_home
    from unified._adapters.codex._options import CodexOptions

    with pytest.raises(ConfigurationError) as caught:
        codex_home(CodexOptions(), {name: NOBODY})
    assert f"{name} '{NOBODY}' names no folder here" in caught.value.message


def test_a_cwd_under_an_unknown_users_home_still_says_so(tmp_path: Path) -> None:
    """Pin (round 23), through the one expansion now shared."""
    from pydantic import ValidationError

    from unified import ExecuteParams

    with pytest.raises(ValidationError, match="the home directory of '~no-such-user-bad26' is not known here"):
        ExecuteParams(prompt="hi", cwd=NOBODY)


# --- 2. a fake server's script that sleeps for good; 3. token counts no API sends -----------------------------------


@pytest.mark.parametrize("value", [".inf", ".nan"])
def test_serve_of_a_script_whose_stream_sleeps_for_good_is_refused(
    value: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """FAILED before: `chunk_delay: .inf` was taken, and every run against the server hung before its first chunk
    (until its own idle timeout, 180 s by default); `.nan` said "greater than or equal to 0"."""
    script = tmp_path / "script.yaml"
    script.write_text(f"turns:\n  - kind: model\n    text: hi\n    chunk_delay: {value}\n")
    done = in_process(capsys, "serve", str(script))
    _assert_one_error_line(done, EXIT_BAD_INPUT, str(script), "chunk_delay", "finite number")


def test_a_fake_server_of_a_delay_without_end_is_refused_at_once() -> None:
    """FAILED before: `FakeGemini(chunk_delay=math.inf)` served, and every stream slept for good."""
    from unified.testing import FakeGemini

    with pytest.raises(ValueError, match="chunk_delay inf is no number of seconds"):
        FakeGemini([], chunk_delay=float("inf"))


def test_a_negative_token_count_in_a_script_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """FAILED before: served as written (no API sends one), and the run under test counted its usage as estimated
    without a word of the script's mistake."""
    script = tmp_path / "script.yaml"
    script.write_text("turns:\n  - kind: model\n    text: hi\n    usage: {input_tokens: -5}\n")
    done = in_process(capsys, "serve", str(script))
    _assert_one_error_line(done, EXIT_BAD_INPUT, str(script), "input_tokens", "greater than or equal to 0")


# --- 4. unified's private cache folder replaced by a link ------------------------------------------------------------


def test_a_private_cache_folder_that_is_a_link_is_refused_and_its_target_left_alone(tmp_path: Path) -> None:
    """FAILED before: the link was followed: its target (here a shared folder, 0755) was made 0700, and the Gemini
    CLI's TMPDIR pointed through it, so its error reports (whole requests) went where the link points."""
    import stat

    from unified._binary.environment import cache_folder, private_cache_folder
    from unified.errors import BackendUnavailable

    target = tmp_path / "shared"
    target.mkdir()
    target.chmod(0o755)
    place = cache_folder("gemini-cli-tmp")
    place.parent.mkdir(parents=True, exist_ok=True)
    place.symlink_to(target)
    with pytest.raises(BackendUnavailable) as caught:
        private_cache_folder("gemini-cli-tmp")
    assert f"{place} is a symbolic link (to {target})" in caught.value.message
    assert f"rm {place}" in str(caught.value)
    assert stat.S_IMODE(target.stat().st_mode) == 0o755


def test_a_private_cache_folder_is_made_and_kept_0700() -> None:
    """Pin: made if missing, and put back to 0700 when it was opened up."""
    import stat

    from unified._binary.environment import private_cache_folder

    made = private_cache_folder("gemini-cli-tmp")
    made.chmod(0o755)
    assert stat.S_IMODE(private_cache_folder("gemini-cli-tmp").stat().st_mode) == 0o700


# --- 5. an empty file name where a file goes -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "name"),
    [
        (("replay", ""), "cassette"),
        (("record", "", "hi"), "cassette"),
        (("serve", ""), "script"),
        (("run", "hi", "--backend", "scripted", "--history", ""), "--history"),
    ],
    ids=["replay", "record", "serve", "history"],
)
def test_an_empty_file_name_is_said_to_be_empty(
    args: tuple[str, ...], name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """FAILED before: the empty name was the current directory, `.`: "error: .: not a cassette (expected a .yaml ...)",
    ".: a generate-content cassette is a .yaml or .yml file", ".: is a directory", "cannot read --history .", each
    naming a file the user never gave (`$CASSETTE` unset in a script)."""
    done = in_process(capsys, *args)
    _assert_one_error_line(done, EXIT_BAD_INPUT, f"Invalid value for '{name}'", "the file's name is empty")


# --- 6. a blank system instruction ----------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["", "  \n"])
@pytest.mark.parametrize("backend", ["generate-content", "claude-code"])
def test_a_blank_system_instruction_is_refused(text: str, backend: str, tmp_path: Path) -> None:
    """FAILED before: generate-content sent `"systemInstruction": {"parts": [{"text": ""}]}` (an empty text part,
    which the Gemini API refuses), and claude-code replaced the CLI's whole system prompt with it."""
    from unified import ExecuteParams, execute

    with pytest.raises(ConfigurationError) as caught:
        execute(ExecuteParams(prompt="hi", backend=backend, cwd=tmp_path, system_instruction=text))
    assert caught.value.message == "the system instruction is empty"
    assert "pass None (leave it out) for the backend's own" in str(caught.value)


# --- 7. two MCP servers of one name ---------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", ["generate-content", "codex", "claude-code"])
def test_two_mcp_servers_of_one_name_are_refused(backend: str, tmp_path: Path) -> None:
    """FAILED before: taken; a server's tools are offered as mcp__<name>__<tool>, and the backends key their servers
    by name (Codex's config table, Claude Code's --mcp-config), so one server silently hid the other."""
    from unified import ExecuteParams, execute
    from unified.types import HttpMcpServer, StdioMcpServer

    servers = (
        StdioMcpServer(name="docs", command="docs-server"),
        HttpMcpServer(name="docs", url="http://127.0.0.1:9/mcp"),
    )
    with pytest.raises(ConfigurationError) as caught:
        execute(ExecuteParams(prompt="hi", backend=backend, cwd=tmp_path, mcp_servers=servers))
    assert "MCP server name 'docs' is given to 2 servers" in caught.value.message
    assert "give each MCP server its own name" in str(caught.value)


# --- 8. a session store URL of another form than scheme:// ---------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("file:", "the session store URL 'file:' names no absolute directory"),
        ("file:relative/x", "the session store URL 'file:relative/x' names no absolute directory"),
        ("/srv/store", "the session store URL '/srv/store' is a path, not a URL"),
        ("~/store", "the session store URL '~/store' is a path, not a URL"),
    ],
)
def test_a_store_url_not_of_scheme_slash_slash_says_what_it_is(url: str, said: str) -> None:
    """FAILED before: each was "an unknown kind of store (file:)", "(file:relative/x)", "(/srv/store)": the scheme
    was read up to "://", so a file URL without it (or a path) was named a kind of store."""
    from unified._sessions.config import store_from_url

    with pytest.raises(ConfigurationError) as caught:
        store_from_url(url)
    assert caught.value.message.startswith(said)
    assert "file:///absolute/directory" in str(caught.value)


def test_a_file_url_without_an_authority_names_its_directory(tmp_path: Path) -> None:
    """FAILED before: `file:/srv/store`, RFC 8089's form without `//` (as `Path.as_uri` never writes but other tools
    do), was "an unknown kind of store"."""
    from unified._sessions.config import store_from_url

    store = store_from_url(f"file:{tmp_path}/store")
    assert isinstance(store, FileSessionStore)
    assert store.root == tmp_path / "store"


def test_other_schemes_are_still_unknown_by_their_scheme_alone() -> None:
    """Pin: an unknown scheme is named without the rest of the URL (which may hold a password)."""
    from unified._sessions.config import store_from_url

    with pytest.raises(ConfigurationError) as caught:
        store_from_url("sqlite://user:secret@host/x")
    assert caught.value.message == "the session store URL names an unknown kind of store (sqlite)"
    assert "secret" not in str(caught.value)


# --- 9. prompt images larger than a request takes --------------------------------------------------------------------

_PNG_HEAD = bytes.fromhex("89504e470d0a1a0a0000000d49484452")


def test_prompt_images_larger_than_a_request_are_refused_naming_the_size(tmp_path: Path) -> None:
    """FAILED before: 26 MiB of images (34.7 MiB as base64) were taken, to be sent and refused by the provider (the
    Anthropic API refuses a request over 32 MB) after the session was begun."""
    from unified import ExecuteParams, execute
    from unified.types import ImageInput

    image = ImageInput(mime_type="image/png", data=_PNG_HEAD + bytes(13 * 1024 * 1024))
    with pytest.raises(ConfigurationError) as caught:
        execute(ExecuteParams(prompt="look", backend="generate-content", cwd=tmp_path, images=[image, image]))
    assert "the prompt's 2 image(s) are 27,263,008 bytes, 36,350,680 as base64" in caught.value.message
    assert "more than a run sends (33,554,432, 32 MiB" in caught.value.message
    assert "fewer or smaller images" in str(caught.value)


def test_prompt_images_under_the_bound_are_taken(tmp_path: Path) -> None:
    """Pin: 20 MiB of images (26.7 MiB as base64) are taken."""
    from unified import ExecuteParams, execute
    from unified.types import ImageInput

    image = ImageInput(mime_type="image/png", data=_PNG_HEAD + bytes(10 * 1024 * 1024))
    execute(ExecuteParams(prompt="look", backend="generate-content", cwd=tmp_path, images=[image, image]))


# --- 10. a prompt or system instruction larger than a request takes -------------------------------------------------


@pytest.mark.parametrize("field", ["prompt", "system_instruction"])
def test_a_prompt_larger_than_a_request_is_refused_naming_the_size(field: str, tmp_path: Path) -> None:
    """FAILED before: the library took a 33 MiB prompt (or system instruction), which `unified run -` refuses, and
    sent it to fail at the provider. Counted in UTF-8: 9 Mi characters of 4 bytes are over too."""
    from unified import ExecuteParams, execute

    text = "\U0001f600" * (9 * 1024 * 1024)  # 36 MiB of UTF-8
    fields = {"prompt": "hi", field: text}
    with pytest.raises(ConfigurationError) as caught:
        execute(ExecuteParams(backend="generate-content", cwd=tmp_path, **fields))
    said = "prompt" if field == "prompt" else "system instruction"
    assert caught.value.message.startswith(f"the {said} is 37,748,736 bytes (36.0 MiB), more than a run sends")
    assert "name it in the prompt" in str(caught.value)


def test_a_long_prompt_under_the_bound_is_taken(tmp_path: Path) -> None:
    """Pin: 30 MiB of ASCII is taken."""
    from unified import ExecuteParams, execute

    execute(ExecuteParams(prompt="x" * (30 * 1024 * 1024), backend="generate-content", cwd=tmp_path))


# --- 11. a fallback's model that is no model name -------------------------------------------------------------------


@pytest.mark.parametrize("model", ["", "gemini 2.5", "gemini-2.5-flash?alt=sse", "../../etc/passwd"])
def test_a_fallbacks_model_that_is_no_model_name_is_refused_at_the_call(model: str, tmp_path: Path) -> None:
    """FAILED before: taken at the call (the run's own model is refused so, round 9), and met only after the first
    backend gave out, when the failover began on it."""
    from unified import ExecuteParams, execute

    params = ExecuteParams(
        prompt="hi",
        backend="generate-content",
        cwd=tmp_path,
        fallback=(Fallback(backend="interactions", model=model),),
    )
    with pytest.raises(ConfigurationError) as caught:
        execute(params)
    assert caught.value.message.startswith(f"the interactions fallback's model {model!r} is not a model name")


# --- 12. fallbacks no error can move the run to --------------------------------------------------------------------


def test_fallbacks_with_an_empty_failover_on_are_refused(tmp_path: Path) -> None:
    """FAILED before: taken; no error is in an empty `failover_on`, so the fallbacks never ran and nothing said why
    (the run ended with the first backend's error)."""
    from unified import ExecuteParams, execute

    params = ExecuteParams(
        prompt="hi", backend="generate-content", cwd=tmp_path, fallback=("interactions",), failover_on=()
    )
    with pytest.raises(ConfigurationError) as caught:
        execute(params)
    assert "failover_on is empty: no error would move the run to them" in caught.value.message
    assert "leave failover_on out" in str(caught.value)


def test_an_empty_failover_on_without_fallbacks_is_taken(tmp_path: Path) -> None:
    """Pin: nothing to move on to, nothing contradicted."""
    from unified import ExecuteParams, execute

    execute(ExecuteParams(prompt="hi", backend="generate-content", cwd=tmp_path, failover_on=()))


# --- 13. a blank excluded tool --------------------------------------------------------------------------------------


@pytest.mark.parametrize("names", [("",), ("read_file", "  ")])
def test_a_blank_excluded_tool_is_refused(names: tuple[str, ...], tmp_path: Path) -> None:
    """FAILED before: taken (`os.environ.get("NO_TOOLS", "").split(",")` gives `[""]`): it names no tool, so the run
    excluded nothing by it and said nothing."""
    from unified import ExecuteParams, execute

    with pytest.raises(ConfigurationError) as caught:
        execute(ExecuteParams(prompt="hi", backend="generate-content", cwd=tmp_path, excluded_tools=names))
    assert caught.value.message.startswith("an excluded_tools entry is blank: it names no tool")
