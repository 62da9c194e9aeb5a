"""How a run starts `codex app-server`: the pinned binary, its isolated home, its settings, its environment.

- **The binary.** `CODEX` is the `BinarySpec` of `@openai/codex` (exact pin; npm installs the
  platform package, `@openai/codex-<os>-<arch>`, which ships the native `codex`). The npm package's
  `bin/codex.js` only finds that native binary and runs it as a child (one more process, signals
  forwarded by hand), so we run the native binary directly (`native_binary`).
- **The home.** Codex keeps its sessions, state and settings in `CODEX_HOME`; unified gives it its
  own (`codex_home`: the `codex_home` option, `UNIFIED_CODEX_HOME`, else `<unified data dir>/codex-home`),
  never the user's `~/.codex`. It holds a `config.toml` of ours with the settings every run shares
  (no update check, analytics and plugins off, web search off, no sandbox (see `_run.SANDBOX`), a shell
  environment policy that keeps keys and tokens out of the model's commands). What differs per run
  (the model provider and its base URL, the model) is given as `-c key=value` overrides on the command
  line, so concurrent runs never race on the file; the run's MCP servers are the thread's own
  (`thread/start`'s `config`, `mcp_servers`), since their tables hold tokens.
- **The provider.** Codex 0.171's built-in `openai` provider ignores `OPENAI_BASE_URL` and an
  `OPENAI_API_KEY` in the environment, and tries a WebSocket first; so an API key or a base URL
  becomes a custom provider of ours (`wire_api = "responses"`, no retries of its own: unified reports
  a 429 at once). Its key is never in the process's environment, which every command the model runs
  could read for the process's whole life (`/proc/$PPID/environ`): the provider takes Codex's own
  login (`requires_openai_auth`), kept in memory only (`cli_auth_credentials_store = "ephemeral"`),
  and the run logs in over stdin (`account/login/start`, `_run`). A ChatGPT login (`auth.json` of the user's
  Codex home) runs on the built-in provider, with that file copied in (`ChatgptLogin`).
- **The environment** is an allowlist (`ENV_POLICY`): the basics, TLS and proxy settings, Rust's
  logging; never unified's own settings or secrets, nor the API key.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import sys
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import platformdirs

from unified._adapters.codex._options import BACKEND, CodexOptions
from unified._adapters.codex._resources_relay import HEADERS_VARIABLE, URL_VARIABLE
from unified._binary.environment import EnvPolicy, FileSignature, child_env, file_signature, home_refusal, signature
from unified._binary.install import BinarySpec, locate
from unified._binary.process import AgentSubprocess
from unified._files import (
    FileTooLarge,
    current_directory,
    expand_user,
    make_folder,
    open_regular,
    read_regular,
    read_regular_text,
    write_atomically,
)
from unified._urls import base_url_refusal
from unified.errors import BackendUnavailable, ConfigurationError
from unified.types import ExecuteParams, HttpMcpServer, SseMcpServer, StdioMcpServer

__all__ = [
    "CODEX",
    "CONFIG_TOML",
    "DEFAULT_BASE_URL",
    "ENV_POLICY",
    "HOME_OVERRIDES",
    "PINNED_VERSION",
    "PROVIDER",
    "WEB_SEARCH",
    "ChatgptLogin",
    "Launch",
    "codex_home",
    "home_is_prepared",
    "native_binary",
    "prepare_home",
    "project_mcp_servers_off",
    "start_codex",
    "toml_value",
    "user_codex_home",
]

PINNED_VERSION = "0.171.0"
CODEX = BinarySpec(
    name=BACKEND,
    package="@openai/codex",
    version=PINNED_VERSION,
    supported=((0, 171, 0), (0, 172, 0)),
    bin="codex",
    env_var="UNIFIED_CODEX_BIN",
    option="codex_binary",
    local_dir=".codex-cli",
    install_command="unified install codex",
    title="the Codex CLI",
    home_vars=("HOME", "CODEX_HOME"),
    min_node=(16, 0, 0),
    runs_on_node=False,
)
"""npm installs the launcher (`bin/codex.js`) and its platform package's native `codex`, which the
backend runs itself (`native_binary`): Node is needed for the install only."""
PROVIDER = "unified"
"""The name of the custom model provider we generate."""
DEFAULT_BASE_URL = "https://api.openai.com/v1"
STAND_IN_BINARY = Path("codex")
"""argv[0] when `start_process` replaces the binary (it is not looked up)."""

ENV_POLICY = EnvPolicy(
    allow=frozenset(
        {
            "SSL_CERT_FILE",
            "SSL_CERT_DIR",
            "HTTPS_PROXY",
            "HTTP_PROXY",
            "ALL_PROXY",
            "NO_PROXY",
            "https_proxy",
            "http_proxy",
            "all_proxy",
            "no_proxy",
            "RUST_LOG",
            "RUST_BACKTRACE",
        }
    )
)
"""What of the caller's environment the app-server sees besides the basics (PATH, HOME, locale, TMPDIR,
terminal): TLS and proxy settings and Rust's logging. Never the API key (it goes by `account/login/start`)."""

SECRET_PATTERNS = ("*KEY*", "*TOKEN*", "*SECRET*", "*PASSWORD*", "*PASSWD*", "*CREDENTIAL*", "*AUTH*")
"""Variables the model's commands never see ([shell_environment_policy] exclude; Codex matches them
case-insensitively)."""

CONFIG_TOML = f"""\
# Written by unified for its codex backend (rewritten when unified's settings change; edits are lost).
# Per-run settings (model provider, model) are passed as -c overrides instead, MCP servers per thread.
check_for_update_on_startup = false
sandbox_mode = "danger-full-access"
web_search = "disabled"
thread_unload_delay_secs = 0

[analytics]
enabled = false

[features]
plugins = false

[shell_environment_policy]
inherit = "all"
exclude = {json.dumps(list(SECRET_PATTERNS))}
"""
"""The settings every run shares: nothing phones home (updates, analytics, plugins), no hosted web
search unless a run asks for it (`CodexOptions.web_search`: it runs without an approval), no key in a
command, a thread unloaded as soon as its run unsubscribes (a warm process then resumes a thread from
its rollout, as a new one would: a retry cuts it, another process may have appended to it). No
sandbox: every thread runs with `approvalPolicy: untrusted`, so nothing runs unapproved, and what is
approved runs once (`_run.SANDBOX`)."""

_PLATFORM_PACKAGES = {
    ("linux", "x86_64"): "codex-linux-x64",
    ("linux", "amd64"): "codex-linux-x64",
    ("linux", "aarch64"): "codex-linux-arm64",
    ("linux", "arm64"): "codex-linux-arm64",
    ("darwin", "x86_64"): "codex-darwin-x64",
    ("darwin", "arm64"): "codex-darwin-arm64",
}


def _is_script(path: Path) -> bool:
    try:
        with open_regular(path) as handle:  # a FIFO there is refused, never waited on
            return handle.read(2) == b"#!"
    except OSError:
        return False


_NATIVE: dict[Path, tuple[FileSignature, Path, FileSignature]] = {}
"""`native_binary`'s answers in this process: the path asked, its file's signature then, the native binary
and its signature. While both files are still those, a run takes the answer with two `stat`s instead of
resolving the launcher's links, reading its first bytes and listing the platform package (480k of the
6.5M instructions of a warm codex run's client, every run)."""


def native_binary(path: Path) -> Path:
    """The native `codex` behind `path`: itself, or, for the npm launcher (`bin/codex.js`), the binary of
    the platform package npm installed beside it. A reinstall, or a link or launcher pointed elsewhere,
    changes a signature, and the binary is looked for again."""
    asked = file_signature(path)
    known = _NATIVE.get(path)
    if known is not None and known[0] == asked and file_signature(known[1]) == known[2]:
        return known[1]
    found = _find_native(path)
    native = file_signature(found)
    if asked is not None and native is not None:
        _NATIVE[path] = (asked, found, native)
    return found


def _find_native(path: Path) -> Path:
    resolved = path.resolve()
    if not _is_script(resolved) and resolved.suffix != ".js":
        return resolved
    package = resolved.parent.parent  # node_modules/@openai/codex
    wanted = _PLATFORM_PACKAGES.get((sys.platform, platform.machine().lower()))
    names = [wanted] if wanted else []
    for scope in (package / "node_modules" / "@openai", package.parent):
        for name in names:
            for candidate in sorted((scope / name / "vendor").glob("*/bin/codex")):
                if candidate.is_file():
                    return candidate
    raise BackendUnavailable(
        f"{path} is the npm launcher of codex, but its platform package ({wanted or 'none for this machine'}) "
        "with the native binary is not installed beside it",
        hint=CODEX.install_hint,
    )


def codex_home(options: CodexOptions, env: Mapping[str, str]) -> Path:
    """The CODEX_HOME of our runs (see the module docstring); never the user's own."""
    if options.codex_home is not None:
        return options.codex_home.expanduser().resolve()
    if env.get("UNIFIED_CODEX_HOME"):
        return _folder_of(env, "UNIFIED_CODEX_HOME").resolve()
    data = env.get("UNIFIED_DATA_DIR")
    base = _folder_of(env, "UNIFIED_DATA_DIR") if data else Path(platformdirs.user_data_dir("unified", appauthor=False))
    if not base.is_absolute():  # relative to a current directory that may be gone: said so (round 24)
        base = current_directory() / base
    return (base / "codex-home").resolve()


def _folder_of(env: Mapping[str, str], name: str) -> Path:
    """The folder the variable `name` of `env` names, `~` expanded; a `ConfigurationError` naming the variable when
    it names an unknown user's home (`~nobody/x`: "unexpected RuntimeError ... (a bug in unified)", round 26)."""
    try:
        return expand_user(env[name])
    except ValueError as exc:
        raise ConfigurationError(
            f"{name} {env[name]!r} names no folder here: {exc}", hint=f"set {name} to an absolute directory"
        ) from None


def user_codex_home(env: Mapping[str, str]) -> Path:
    """The user's own Codex home (`CODEX_HOME`, else `~/.codex`): only ever read, for a ChatGPT login."""
    if env.get("CODEX_HOME"):
        return _folder_of(env, "CODEX_HOME")
    return Path(env.get("HOME") or Path.home()) / ".codex"


def _may_be(home: Path, other: Path) -> bool:
    """Whether `home` (resolved) may be the directory `other` names, before `other` is resolved (realpath: an
    `lstat` per component in Python, every run): not when `home` is there and `other` is not, as for a user with
    an API key and no `codex login` (no `~/.codex`), since a path that names an existing directory exists. Any
    other answer of the two `stat`s leaves it to the resolved paths."""
    try:
        os.stat(other)
    except FileNotFoundError:
        try:
            os.stat(home)
        except OSError:
            return True
        return False
    except OSError:
        return True
    return True


_PREPARED: dict[Path, FileSignature] = {}
"""The config.toml of each home `prepare_home` wrote or found current in this process (its
`file_signature`): while it is still that file, a run checks it with one `stat` on the event loop instead of
reading it in a worker thread (a round trip that cost ~1-2 ms before the spawn on a loaded machine)."""


def home_is_prepared(home: Path) -> bool:
    """Whether the home's config.toml is still the very file `prepare_home` wrote or read as ours (any
    rewrite, edit or removal since changes its signature): one `stat`."""
    known = _PREPARED.get(home)
    return known is not None and file_signature(home / "config.toml") == known


def prepare_home(home: Path) -> None:
    """Make the home and (re)write our config.toml when it differs (atomically: runs may start at once)."""
    make_folder(home)
    target = home / "config.toml"
    before = file_signature(target)
    with contextlib.suppress(OSError):
        if read_regular_text(target) == CONFIG_TOML:  # a FIFO there is refused, then replaced
            if before is not None and file_signature(target) == before:  # not replaced while it was read
                _PREPARED[home] = before
            return
    _PREPARED[home] = signature(write_atomically(target, CONFIG_TOML))


def toml_value(value: Any) -> str:
    """A TOML value (inline tables for mappings): what a `-c key=value` override takes."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # a JSON string is a TOML basic string
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{json.dumps(str(k))} = {toml_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, Sequence):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    raise TypeError(f"no TOML form for {type(value).__name__}")


@dataclass(frozen=True, slots=True)
class ChatgptLogin:
    """A ChatGPT login (`auth.json` with `auth_mode: chatgpt`) in the user's Codex home, used by copying it
    into ours when a process is started and back after each run when Codex refreshed its tokens (and the
    original did not change meanwhile), so the user's login stays current."""

    source: Path

    def copy_in(self, home: Path) -> bytes:
        data = read_regular(self.source)
        write_atomically(home / "auth.json", data, mode=0o600)
        return data

    def copy_back(self, home: Path, original: bytes) -> bytes:
        """Returns what the two homes share now: the next run of a warm process compares with that."""
        with contextlib.suppress(OSError):
            now = read_regular(home / "auth.json")
            if now != original and read_regular(self.source) == original:
                write_atomically(self.source, now, mode=0o600)
                return now
        return original


def chatgpt_login(env: Mapping[str, str]) -> ChatgptLogin | None:
    """The user's ChatGPT login, if their Codex home has one."""
    source = user_codex_home(env) / "auth.json"
    try:
        data = json.loads(read_regular(source))
    except (OSError, ValueError, RecursionError):
        return None
    if isinstance(data, dict) and data.get("auth_mode") == "chatgpt" and isinstance(data.get("tokens"), dict):
        return ChatgptLogin(source)
    return None


RESOURCES_RELAY = Path(__file__).with_name("_resources_relay.py")
"""The relay an MCP server runs behind outside yolo (`_resources_relay`: its resources off, read unasked by Codex)."""


def _mcp_table(server: StdioMcpServer | HttpMcpServer, *, resources_off: bool) -> dict[str, Any]:
    """An MCP server as Codex's `[mcp_servers.NAME]` table, with its secrets (a stdio server's `env`, an HTTP
    server's headers) as values: the table goes to Codex over stdin (`thread/start`'s `config`), never on its
    command line (any local user reads a process's argv) nor in its environment, which every command the
    model runs could read (`/proc/$PPID/environ`: measured, a stdio server's `env` and an HTTP server's
    bearer token were both printed there when they were forwarded that way). `resources_off`: the server, stdio
    or streamable HTTP, runs behind `_resources_relay`, which takes its resources away (Codex would read them
    unasked); an HTTP server's URL and headers are then the relay's environment (its own, not Codex's)."""
    table: dict[str, Any]
    if isinstance(server, StdioMcpServer):
        table = {"command": server.command, "args": list(server.args)}
        if resources_off:
            relay = ["-I", "-S", str(RESOURCES_RELAY), "--", server.command, *server.args]
            table = {"command": sys.executable, "args": relay}
        if server.env:
            table["env"] = dict(server.env)
        if server.cwd is not None:
            table["cwd"] = str(server.cwd)
    elif resources_off:
        # the URL and headers in the relay's environment alone (the table reaches Codex over stdin)
        relay_env = {URL_VARIABLE: server.url, HEADERS_VARIABLE: json.dumps(dict(server.headers))}
        table = {"command": sys.executable, "args": ["-I", "-S", str(RESOURCES_RELAY), "--http"], "env": relay_env}
    else:
        table = {"url": server.url}
        if server.headers:
            table["http_headers"] = dict(server.headers)
    table["startup_timeout_sec"] = max(1, round(server.timeout_s))
    # Every MCP tool asks, so the caller decides every call that can change anything.
    table["default_tools_approval_mode"] = "prompt"
    return table


WEB_SEARCH = ("web_search", "google_web_search")
"""The names under which `excluded_tools` turns the `web_search` option's hosted search off (Codex's, the Gemini
CLI's): it is then not turned on."""


def _excludes_web_search(params: ExecuteParams) -> bool:
    if not params.excluded_tools:
        return False
    from unified.tools._runtime import is_excluded  # the runtime's own reading of excluded_tools (imported late)

    return any(is_excluded(name, params.excluded_tools) for name in WEB_SEARCH)


PROJECT_CONFIG = Path(".codex") / "config.toml"
"""A project's own Codex settings, which Codex reads in the run's folder and the folders above it."""
_SERVER_OFF: dict[str, Any] = {"enabled": False, "command": "true"}
"""What a project's MCP server becomes in a thread's config: turned off (`command` makes the table valid alone, for a
file Codex did not read: it reads a folder's only up to the project's root)."""


def project_mcp_servers_off(cwd: Path, own: Sequence[str] = (), home: Path | None = None) -> dict[str, dict[str, Any]]:
    """A `mcp_servers` table turning off each MCP server a repository's `.codex/config.toml` names: in `cwd` and
    the folders above it up to the project's root (the first with a `.git`, as Codex looks), never in `home` (the
    user's own `~/.codex`) or above it.

    Codex 0.171 starts a project's `[mcp_servers.*]` (its command runs) although it says project-local config is
    "disabled until the project is trusted" (measured: `command = "sh" args = ["-c", "touch x"]` in the workspace's
    file ran at `thread/start`), so a repository could run any command, or add tools, the caller never gave. A file
    that names a server the run names too (`own`: Codex would merge the file's table into the caller's, its `env` say),
    is too large to read, or is no TOML Python's `tomllib` reads is refused before the run starts: Codex 0.171 reads
    TOML 1.1 and a byte order mark, which `tomllib` does not (round 33: `mcp_servers = { repo = { command = "sh" }, }`
    was left alone, and Codex started it; measured with `codex mcp list`)."""
    off: dict[str, dict[str, Any]] = {}
    for folder in (cwd, *cwd.parents):
        if folder == home:
            break
        path = folder / PROJECT_CONFIG
        try:
            data = tomllib.loads(read_regular_text(path, max_bytes=1 << 20))
        except FileTooLarge:
            raise ConfigurationError(
                f"{path} is over 1 MiB: unified cannot tell which MCP servers it would have Codex start",
                hint="shorten or remove that file (a project's Codex settings), or run in another folder",
            ) from None
        except (FileNotFoundError, NotADirectoryError):
            continue
        except (OSError, ValueError, RecursionError) as exc:  # UnicodeDecodeError and TOMLDecodeError are ValueErrors
            raise ConfigurationError(
                f"{path} cannot be read as TOML 1.0 ({exc}): unified cannot tell which MCP servers it would have Codex "
                "start, and Codex reads more (TOML 1.1: a trailing comma or a line break in an inline table, `\\e` and "
                "`\\x` escapes; a byte order mark)",
                hint="rewrite that file (a project's Codex settings) as plain TOML 1.0, or remove it, or run in "
                "another folder",
            ) from None
        servers = data.get("mcp_servers")
        if not isinstance(servers, dict):
            servers = {}
        if clash := sorted(set(servers) & set(own)):
            raise ConfigurationError(
                f"{path} defines MCP server {clash[0]!r}, which the run's mcp_servers name too: Codex would merge "
                "that file's settings into the run's server",
                hint="give the run's MCP server another name, or remove it from that file",
            )
        off.update((name, dict(_SERVER_OFF)) for name in servers)
        if (folder / ".git").exists():
            break
    return off


HOME_OVERRIDES: Mapping[str, str] = {
    "rules": "exec policy rules, which let Codex run commands without asking",
    "AGENTS.md": "instructions Codex gives the model in every run",
    "AGENTS.override.md": "instructions Codex gives the model in every run",
    "hooks.json": "hooks, commands Codex runs at its own events",
    "hooks": "hooks, commands Codex runs at its own events",
}
"""What Codex 0.171 reads in its home, besides our config.toml, that decides what runs unasked or what the model is
told in every run: `rules/` (its exec policy: a `prefix_rule(pattern=["touch"], decision="allow")` there had the
model's `touch PWNED` run in default mode with no approval request at all) and the home's AGENTS.md (put into every
request, whatever `project_doc_max_bytes` says); measured, round 38. unified writes none of them (it never answers
`acceptWithExecpolicyAmendment`, which writes a rule there), nor does Codex on its own, so one found there was put by
something else, such as a command a model ran in an earlier run: the run is refused (`environment.home_refusal`).
Round 41: the home's `hooks.json` (hooks are on in 0.171, `features list`: `hooks stable true`), whose commands
Codex runs at its session's and tools' events once trusted (a planted one, untrusted, ran nothing: measured; how
0.171 records a hook's trust, a `trusted_hash` per hook, was not), and a `hooks` folder (0.171 names
`hooks/hooks.json`); Codex writes neither itself (measured: a run's home holds none)."""


def _home_skills(home: Path) -> dict[str, str]:
    """The home's own skills besides those Codex bundles (`skills/.system`, which it writes at every start), as
    `home_refusal` takes them. Round 41: with `project_instructions` on, a planted `<home>/skills/evil/SKILL.md` was
    listed to the model as a skill it must use (measured with 0.171; the option reads the repository's skills, not
    the home's). A folder that cannot be listed is refused whole (fail closed)."""
    what = "a skill Codex lists to the model as one it must use"
    try:
        with os.scandir(home / "skills") as entries:
            return {f"skills/{entry.name}": what for entry in entries if entry.name != ".system"}
    except (FileNotFoundError, NotADirectoryError):
        return {}
    except OSError:
        return {"skills": what}


_HOME_HINT = "remove it (look at what it says first: it may be an attack's), or point codex_home elsewhere"


@dataclass(frozen=True, slots=True)
class Launch:
    """Everything one run's process needs: the binary, the home, the argv overrides, the environment."""

    binary: Path
    home: Path
    env: dict[str, str]
    overrides: tuple[tuple[str, Any], ...]
    auth: str
    """How the run authenticates: `api_key` (an OpenAI key), `base_url` (a key and a custom base URL),
    `chatgpt` (the user's ChatGPT login), for `doctor`'s and the errors' words."""
    base_url: str | None
    chatgpt: ChatgptLogin | None = None
    mcp_servers: dict[str, dict[str, Any]] = field(default_factory=dict, repr=False)
    """The run's MCP servers as Codex's tables, by name: the thread's `config` (`_run`), never the process's
    argv or environment (they hold tokens). So a warm process serves runs of any MCP servers."""
    project_servers_off: dict[str, dict[str, Any]] = field(default_factory=dict, repr=False)
    """The MCP servers a repository's own `.codex/config.toml` names, each turned off in the thread's `config`
    (`project_mcp_servers_off`): only the caller's servers run."""
    api_key: str | None = field(default=None, repr=False)
    """The run's OpenAI key, given to the process by `account/login/start` (`_run`), never in its environment."""

    @classmethod
    def of(cls, params: ExecuteParams, options: CodexOptions, parent: Mapping[str, str] | None = None) -> Launch:
        source: Mapping[str, str] = os.environ if parent is None else parent  # read, never copied
        home = codex_home(options, source)
        from unified.tools._protected import credential_home  # the tool runtime: loaded by a run, not by the options

        credential_home("codex", home)  # a caller's `codex_home` option: its auth.json is a credential file too
        user_home = user_codex_home(source).expanduser()
        with contextlib.suppress(OSError):
            if _may_be(home, user_home) and home == user_home.resolve():
                raise ConfigurationError(
                    f"the codex backend's home {home} is your own Codex home",
                    hint="unified runs Codex in a home of its own: point codex_home / UNIFIED_CODEX_HOME elsewhere",
                )
        if (planted := home_refusal(home, {**HOME_OVERRIDES, **_home_skills(home)}, BACKEND, _HOME_HINT)) is not None:
            raise planted
        extra = dict(options.env)
        key = options.api_key or source.get("OPENAI_API_KEY") or None
        base_url = options.base_url or source.get("OPENAI_BASE_URL") or None
        url_source = "the base_url option" if options.base_url else "OPENAI_BASE_URL"
        form = "as the OpenAI SDKs read it: https://host/v1"
        refusal = None if base_url is None else base_url_refusal(base_url, url_source, "Codex", form=form)
        if refusal is not None:  # else Codex starts, then fails the turn as a `stream_interrupted` "builder error"
            raise ConfigurationError(refusal[0], hint=refusal[1])
        overrides: list[tuple[str, Any]] = []
        chatgpt = None
        if key is not None:
            provider = {
                "name": PROVIDER,
                "base_url": (base_url or DEFAULT_BASE_URL).rstrip("/"),
                "wire_api": "responses",
                "requires_openai_auth": True,
                "request_max_retries": 0,
                "stream_max_retries": 0,
                "stream_idle_timeout_ms": round(options.stream_idle_timeout_s * 1000),
            }
            overrides += [
                ("model_provider", PROVIDER),
                (f"model_providers.{PROVIDER}", provider),
                ("cli_auth_credentials_store", "ephemeral"),
            ]
            auth = "base_url" if base_url else "api_key"
        elif base_url:
            raise ConfigurationError(
                f"{url_source} is set but no key is (neither the api_key option nor OPENAI_API_KEY): a custom "
                "base URL needs a key",
                hint=f"set the api_key option or OPENAI_API_KEY to the key that server expects, or unset {url_source}",
            )
        else:
            chatgpt = chatgpt_login(source)
            if chatgpt is None:
                raise BackendUnavailable(
                    "the codex backend has no credentials: no OPENAI_API_KEY and no ChatGPT login in "
                    f"{user_home / 'auth.json'}",
                    hint="set OPENAI_API_KEY (and OPENAI_BASE_URL for another server), or run `codex login`",
                )
            overrides.append(("model_provider", "openai"))
            if options.chatgpt_base_url:
                overrides.append(("chatgpt_base_url", options.chatgpt_base_url))
            auth = "chatgpt"
        if params.model:
            overrides.append(("model", params.model))
        if options.web_search != "disabled" and not _excludes_web_search(params):
            overrides.append(("web_search", options.web_search))
        thinking = params.thinking
        if thinking is not None:
            if thinking.level is not None:
                overrides.append(("model_reasoning_effort", thinking.level))
            overrides.append(("model_reasoning_summary", "detailed" if thinking.include_thoughts else "none"))
        servers: dict[str, dict[str, Any]] = {}
        for server in params.mcp_servers:
            if isinstance(server, SseMcpServer):
                continue  # Codex does not speak SSE: the backend refuses the run (a fatal unsupported option)
            if not server.name.replace("-", "_").replace("_", "").isalnum():
                raise ConfigurationError(
                    f"MCP server name {server.name!r} cannot be a Codex config key", hint="use letters, digits, - and _"
                )
            servers[server.name] = _mcp_table(server, resources_off=params.approval_mode != "yolo")
        home_dir = Path(source.get("HOME") or Path.home()).expanduser().resolve()
        project_off = project_mcp_servers_off(params.cwd.expanduser().resolve(), tuple(servers), home_dir)
        # parent None: the environment, as `child_env` keeps it; cwd: its repository's diff and filter commands off
        env = child_env(ENV_POLICY, extra=extra, parent=parent, cwd=params.cwd.expanduser())
        env["CODEX_HOME"] = str(home)
        binary = (
            STAND_IN_BINARY
            if options.start_process is not None
            else native_binary(locate(CODEX, options.codex_binary, source).path)
        )
        return cls(
            binary=binary,
            home=home,
            env=env,
            overrides=tuple(overrides),
            auth=auth,
            base_url=base_url,
            chatgpt=chatgpt,
            mcp_servers=servers,
            project_servers_off=project_off,
            api_key=key,
        )

    @property
    def provider_id(self) -> str:
        """The model provider's id in Codex's config (what its rollouts record)."""
        return "openai" if self.auth == "chatgpt" else PROVIDER

    def argv(self) -> list[str]:
        argv = [str(self.binary), "app-server", "--strict-config"]
        for key, value in self.overrides:
            argv += ["-c", f"{key}={toml_value(value)}"]
        return argv


def start_codex(argv: Sequence[str], cwd: Path, env: Mapping[str, str]) -> AgentSubprocess:
    """The default `start_process`: the `codex app-server` subprocess (a large line limit: a resumed
    thread's answer carries its history)."""
    return AgentSubprocess(argv, cwd=cwd, env=env, hint=CODEX.install_hint)
