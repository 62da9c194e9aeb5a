"""Bad input round 20, the unit tier: options that contradict what they are for, values no process can be given,
and session stores whose paths are broken in ways no permission fixes. Each case says what happened before.

- `failover_on` took any string: `("rate_limit",)` (the code is `rate_limited`) or `("429",)` was accepted and the
  run never failed over, saying nothing; now refused where it is given, naming the nearest code;
- a NUL byte in a variable of `backend_options.env` (or `=` in its name) made the binary's start fail as
  `backend_unavailable` "could not start <binary>: embedded null byte" with the hint to reinstall the CLI; now a
  `configuration_error` naming the variable (never its value) and what to change;
- a session store whose path loops through symbolic links, and a folder where a record goes, said "make that
  directory writable" (as root it is writable: nothing to do); now what is wrong and what to do;
- a proxy variable left out of a binary's environment (`proxy_not_forwarded`) is added to the message of the
  network failures it may have caused, and to nothing else (e2e: tests/e2e/codex/test_codex_bad_input_round20.py).
"""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest
from pydantic import ValidationError

from tests.sessions.records import BACKEND, stored_session
from unified import ExecuteParams
from unified._binary.process import AgentSubprocess
from unified._binary.proxy import with_left_out_proxies
from unified._sessions.stores import FileSessionStore
from unified.errors import (
    BackendUnavailable,
    ConfigurationError,
    SessionNotFound,
    SessionStoreUnavailable,
    UnifiedError,
)

PASSWORD = "s3cret-round20-value"


# --- failover_on -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "near"), [("rate_limit", "'rate_limited'"), ("autherr", "'auth_error'"), ("429", None)]
)
def test_failover_on_refuses_what_is_no_error_code_naming_the_nearest(given: str, near: str | None) -> None:
    """FAILED before: the params were taken, and the run never failed over on the misspelt code."""
    with pytest.raises(ValidationError) as caught:
        ExecuteParams(prompt="hi", fallback=("codex",), failover_on=("backend_unavailable", given))
    said = str(caught.value)
    assert f"{given!r} is no error code, so no run would ever fail over on it" in said
    assert "unified.events.ErrorCode" in said
    assert (f"did you mean {near}?" in said) if near else ("did you mean" not in said)


def test_failover_on_takes_every_registered_code() -> None:
    """Pin: the registry's codes, the default and an empty tuple (never fail over) stay accepted."""
    from unified.events import ERROR_CODES
    from unified.types import FAILOVER_CODES

    assert set(ExecuteParams(prompt="hi", failover_on=tuple(ERROR_CODES)).failover_on) == ERROR_CODES
    assert ExecuteParams(prompt="hi").failover_on == FAILOVER_CODES
    assert ExecuteParams(prompt="hi", failover_on=()).failover_on == ()


# --- a value no process can be given -------------------------------------------------------------------------


@pytest.mark.e2e  # Popen is called (it refuses before its fork: no process starts)
@pytest.mark.parametrize(
    ("env", "said"),
    [
        ({"FOO": f"{PASSWORD}\0tail"}, "the environment variable FOO holds a NUL byte"),
        ({"F=OO": PASSWORD}, "the environment variable named 'F=OO' has no name a process can have"),
        ({"F\0OO": PASSWORD}, "the environment variable named 'F\ufffdOO' has no name a process can have"),
    ],
    ids=["nul-in-value", "equals-in-name", "nul-in-name"],
)
def test_a_variable_no_process_can_carry_is_a_configuration_error_naming_it(
    tmp_path: Path, env: dict[str, str], said: str
) -> None:
    """No process starts (the check fails before the fork). FAILED before: `backend_unavailable` "could not start
    /bin/true: embedded null byte", whose hint said to install the CLI."""
    with pytest.raises(ConfigurationError) as caught:
        AgentSubprocess(["/bin/true"], cwd=tmp_path, env={"PATH": os.defpath, **env})
    error = caught.value
    assert not isinstance(error, BackendUnavailable)
    assert error.code == "configuration_error"
    assert said in error.message, error.message
    assert "backend_options.env" in str(error.hint)
    assert PASSWORD not in str(error)


@pytest.mark.e2e  # as above
def test_a_nul_in_an_argument_names_the_argument(tmp_path: Path) -> None:
    """FAILED before (backend_unavailable, "embedded null byte", the install hint)."""
    with pytest.raises(ConfigurationError, match="argument 2 of its command line holds a NUL byte"):
        AgentSubprocess(["/bin/echo", "fine", "bad\0arg"], cwd=tmp_path, env={"PATH": os.defpath})


# --- session stores no permission fixes ---------------------------------------------------------------------------


def test_a_store_whose_path_loops_says_so_not_make_it_writable(tmp_path: Path) -> None:
    """FAILED before: "Too many levels of symbolic links ... (make that directory writable, ...)"."""
    root = tmp_path / "store"
    os.symlink(root, root)  # the store's folder is a link to itself
    store = FileSessionStore(root)
    for call in (
        lambda: anyio.run(store.list_sessions, BACKEND),
        lambda: anyio.run(store.save, stored_session("ab000000-new")),
    ):
        with pytest.raises(SessionStoreUnavailable) as caught:
            call()
        assert "a symbolic link on the way to" in str(caught.value.hint)
        assert "loops" in str(caught.value.hint)
        assert "make that directory writable" not in str(caught.value)


def test_deleting_a_record_that_is_a_folder_says_it_is_a_folder(tmp_path: Path) -> None:
    """A folder where a session's record goes is never read nor listed (the store follows no such entry); asked to
    delete it, the store says what is there and leaves it. FAILED before: "Is a directory ... (make that directory
    writable ...)"."""
    store = FileSessionStore(tmp_path)
    anyio.run(store.save, stored_session("ab000000-kept"))
    anyio.run(store.save, stored_session("cd000000-folder"))
    record = store.path_of(BACKEND, "cd000000-folder")
    record.unlink()
    record.mkdir()
    (record / "inside").write_text("x")
    with pytest.raises(SessionStoreUnavailable) as caught:
        anyio.run(store.delete, BACKEND, "cd000000-folder")
    assert f"{record} is a folder where a session record goes: move it away" in str(caught.value.hint)
    assert "make that directory writable" not in str(caught.value)
    assert (record / "inside").read_text() == "x"  # nothing removed
    assert [s.session_id for s in anyio.run(store.list_sessions, BACKEND)] == ["ab000000-kept"]


# --- a proxy left out ------------------------------------------------------------------------------------------------


_LEFT_OUT = {"ALL_PROXY": f"socks4://user:{PASSWORD}@socks.example:1080", "PATH": "/bin"}


@pytest.mark.parametrize("code", ["backend_unavailable", "backend_error", "stream_interrupted"])
def test_a_network_failure_names_the_proxy_left_out(code: str) -> None:
    """FAILED before (the helper did not exist: the problem was only in a stderr tail)."""
    error = with_left_out_proxies(UnifiedError("fetch failed", code=code, hint="check the network"), _LEFT_OUT)
    assert error.message.startswith("fetch failed; note: ALL_PROXY carries credentials")
    assert "(proxy_not_forwarded): use an http://" in error.message
    assert str(error).endswith("(check the network)")
    assert error.details["proxy_problems"] == ["proxy_not_forwarded"]
    assert PASSWORD not in str(error) + repr(error.details)


def test_other_failures_and_envs_without_such_a_proxy_are_left_as_they_were() -> None:
    """Pin: a session's failure says nothing of a proxy; nor does a network failure when no variable was left out."""
    missing = SessionNotFound("no session matches 'ab'")
    assert with_left_out_proxies(missing, _LEFT_OUT).message == "no session matches 'ab'"
    down = BackendUnavailable("could not connect")
    plain = {"ALL_PROXY": "socks4://socks.example:1080", "HTTPS_PROXY": f"http://u:{PASSWORD}@proxy.example:3128"}
    assert with_left_out_proxies(down, plain).message == "could not connect"
    assert "proxy_problems" not in down.details


@pytest.mark.parametrize(
    ("backend", "options"),
    [("claude-code", {}), ("codex", {"api_key": "sk-fake-key", "pool_size": 0}), ("gemini-cli", {"pool_size": 0})],
)
def test_each_binary_backend_names_the_proxy_left_out_in_its_network_failure(
    backend: str, options: dict[str, object], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The binary is never started: its starter fails as a CLI that could not reach its provider. FAILED before on
    each (the message was the failure's alone)."""
    from unified import execute_sync
    from unified.events import ErrorEvent

    monkeypatch.setenv("ALL_PROXY", _LEFT_OUT["ALL_PROXY"])
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-fake-key-round20")
    monkeypatch.setenv("GEMINI_API_KEY", "AIza-fake-key-round20")

    def unreachable(*_: object) -> None:
        raise BackendUnavailable("could not connect to the provider")

    params = ExecuteParams(
        prompt="hi", backend=backend, cwd=tmp_path, backend_options={"start_process": unreachable, **options}
    )
    events = list(execute_sync(params))
    [error] = [e for e in events if isinstance(e, ErrorEvent)]
    assert error.code == "backend_unavailable"
    assert error.message.startswith("could not connect to the provider; note: ALL_PROXY carries credentials")
    assert error.details["proxy_problems"] == ["proxy_not_forwarded"]
    assert PASSWORD not in "".join(e.model_dump_json() for e in events)
