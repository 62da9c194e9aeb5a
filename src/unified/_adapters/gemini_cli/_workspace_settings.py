"""A workspace's own `.gemini/settings.json` and `.env`: what in them would act behind the caller's back, and
whether the CLI reads them at all.

The CLI merges `<cwd>/.gemini/settings.json` into its settings when it trusts the folder: always with folder trust
off (`security.folderTrust.enabled: false`, which a user sets to run yolo), else when `trustedFolders.json` trusts
it. Measured with 0.61 and a hostile repository's file: its `tools.discoveryCommand` ran at `session/new` and its
`mcpServers` were started on both transports, its `hooks` ran over stream-json (`SessionStart`, `BeforeTool`) and
its `context.includeDirectories` let the tools read a folder the run never named, each before or beside anything
unified's policy decides; its `tools.allowed` is now below unified's rules (`_launch.policy_rules`,
`unasked_denials`), its `general.defaultApprovalMode` and `model.name` below the run's explicit mode and model. The
other `UNSAFE_SETTINGS` are taken from the CLI's settings schema (a command, a sandbox image, telemetry's endpoint),
not measured. A file with such a setting in a folder the CLI would trust is refused before the CLI starts
(`workspace_refusal`), and so is an environment file that would move the endpoint, or give a run that names no key
the repository's own (`env_file_refusal`).
"""

from __future__ import annotations

import errno
import functools
import json
import os
import re
import stat
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from unified._files import not_a_file, read_regular
from unified.tools._protected import LINK_SCAN_MAX_ENTRIES, _files_under, _TooMany
from unified.tools._shell_syntax import code_variable

__all__ = [
    "FolderTrust",
    "cli_trusts",
    "env_file_refusal",
    "memory_file_refusal",
    "memory_names",
    "special_file_refusal",
    "workspace_refusal",
]

UNSAFE_SETTINGS = (
    "hooks",
    "mcpServers",
    "mcp.serverCommand",
    "tools.discoveryCommand",
    "tools.callCommand",
    "tools.sandbox",
    "experimental.gemmaModelRouter.enabled",
    "telemetry.enabled",
    "telemetry.otlpEndpoint",
    "telemetry.outfile",
    "context.includeDirectories",
)
"""The settings (set to anything but false or empty) with which the CLI runs a command or a server of the file's
own (hooks, MCP servers, tool discovery and calls, a sandbox image, the Gemma router's binary), sends what the run
does elsewhere (telemetry, prompts included), or lets its tools reach folders the caller never named."""
_MAX_BYTES = 1 << 20
_LEADS_ELSEWHERE = re.compile(r"[/\\]|^\s*\.{1,2}\s*$")
"""A memory file name (`context.fileName`) that is no plain name in its folder: 0.61 joins each to the folders it
looks in (`path.join(home, ".gemini", name)`), so `../.ssh/id_rsa` read the user's key into the request it sent the
model (round 33, e2e); a plain name (`AGENTS.md`) is a repository's own choice."""


def strip_comments(text: str) -> str:
    """`text` without its `//` and `/* */` comments (outside strings), as the CLI's strip-json-comments reads it."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        char = text[i]
        if char == '"':
            end = i + 1
            while end < n and text[end] != '"':
                end += 2 if text[end] == "\\" else 1
            out.append(text[i : end + 1])
            i = end + 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
        else:
            out.append(char)
            i += 1
    return "".join(out)


def _parsed(path: Path) -> object:
    """The settings file at `path` as the CLI parses it (OSError, ValueError; RecursionError for JSON nested deeper
    than Python reads, which the CLI's `JSON.parse` reads still)."""
    return json.loads(strip_comments(read_regular(path, max_bytes=_MAX_BYTES).decode("utf-8", "replace")))


def _settings(path: Path) -> dict[str, Any] | None:
    """The settings file at `path` as the CLI parses it; None when there is none it could use."""
    try:
        data = _parsed(path)
    except (OSError, ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def _listed(value: object) -> list[object]:
    """A setting that takes one value or a list of them, as a list (none when unset)."""
    return value if isinstance(value, list) else [] if value is None else [value]


def _get(settings: Mapping[str, Any] | None, dotted: str) -> object:
    value: object = settings
    for key in dotted.split("."):
        value = value.get(key) if isinstance(value, dict) else None
    return value


def cli_trusts(cwd: Path, env: Mapping[str, str], home: Path, system: Path) -> bool:
    """Whether the CLI trusts `cwd` (0.61 `checkPathTrust`): the environment's word, else folder trust off (the
    system's settings, else the user's), else the longest `trustedFolders.json` rule that holds `cwd`. Unsure (an
    unreadable trust file, which the CLI refuses to start over): trusted. In a folder it does not trust the CLI
    ignores the workspace's settings, refuses yolo and starts no stdio MCP server (the run's too, silently)."""
    if env.get("GEMINI_RESTRICTED_MODE") == "true" or env.get("GEMINI_CLI_TRUST_WORKSPACE") == "false":
        return False
    if env.get("GEMINI_CLI_TRUST_WORKSPACE") == "true":
        return True
    enabled = _get(_settings(system), "security.folderTrust.enabled")
    if enabled is None:
        enabled = _get(_settings(home / ".gemini" / "settings.json"), "security.folderTrust.enabled")
    if enabled is False:
        return True
    trust_file = Path(env.get("GEMINI_CLI_TRUSTED_FOLDERS_PATH") or home / ".gemini" / "trustedFolders.json")
    if not trust_file.exists():
        return False
    rules = _settings(trust_file)
    if rules is None:
        return True
    best, level = -1, None
    for rule, trust in rules.items():
        folder = Path(rule).parent if trust == "TRUST_PARENT" else Path(rule)
        try:
            holds = cwd.is_relative_to(folder.resolve())
        except (OSError, ValueError):
            continue
        if holds and len(rule) > best:
            best, level = len(rule), trust
    return level in ("TRUST_FOLDER", "TRUST_PARENT")


@dataclass(frozen=True)
class FolderTrust:
    """One start's folder `cwd` (resolved), the CLI's environment `env`, its `home` and its system settings file
    `system`; `trusted` is `cli_trusts` of them, looked up at most once. A start asked up to four times (the workspace's
    settings, its `.env`, a mode that needs trust, a stdio MCP server), and each look reads the system and user settings
    and the trust file."""

    cwd: Path
    env: Mapping[str, str]
    home: Path
    system: Path

    @functools.cached_property
    def trusted(self) -> bool:
        return cli_trusts(self.cwd, self.env, self.home, self.system)

    @functools.cached_property
    def env_file(self) -> Path | None:
        """The `.env` the CLI loads here where it trusts the folder (`_env_file`), looked up once a start: the start's
        special files and its `.env`'s variables are both judged by it."""
        return _env_file(self.cwd, self.home, trusted=True)

    @functools.cached_property
    def untrusted_env_file(self) -> Path | None:
        """The `.env` the CLI loads here where it does not trust the folder (no `.gemini/.env`), looked up once."""
        return _env_file(self.cwd, self.home, trusted=False)


def workspace_refusal(folder: FolderTrust) -> str | None:
    """Why the run must not start in `folder.cwd`: its `.gemini/settings.json` sets what `UNSAFE_SETTINGS` names (or is
    too large, or nested too deeply, to tell) and the CLI would read it (`FolderTrust.trusted`). None when it may: no
    such file or setting, the user's own settings (a home folder), or a folder the CLI does not trust."""
    cwd, home = folder.cwd, folder.home
    path = cwd / ".gemini" / "settings.json"
    if cwd == home.resolve():
        return None
    try:
        too_large = path.stat().st_size > _MAX_BYTES
    except OSError:
        return None
    data: object = None
    too_deep = False
    try:
        data = _parsed(path)
    except RecursionError:  # round 33: `{"hooks": ..., "x": [[[...]]]}` hid its hooks, which the CLI ran
        too_deep = True
    except (OSError, ValueError):  # the CLI cannot use it either: it refuses to start over it
        pass
    settings = data if isinstance(data, dict) else None
    found = [key for key in UNSAFE_SETTINGS if _get(settings, key)]
    names = _get(settings, "context.fileName")
    if any(not isinstance(name, str) or _LEADS_ELSEWHERE.search(name) for name in _listed(names)):
        found.append("context.fileName")
    if not (found or too_large or too_deep) or not folder.trusted:
        return None
    if too_large or too_deep:
        return f"{path} is {'over 1 MiB' if too_large else 'nested too deeply'}, too large to read"
    return f"{path} sets {', '.join(found)}"


ENDPOINT_VARIABLES = (
    "GOOGLE_GEMINI_BASE_URL",
    "GOOGLE_VERTEX_BASE_URL",
    "CODE_ASSIST_ENDPOINT",
    "GOOGLE_GENAI_USE_VERTEXAI",
    "GOOGLE_GENAI_USE_GCA",
    "HTTPS_PROXY",
    "https_proxy",
    "HTTP_PROXY",
    "http_proxy",
    "ALL_PROXY",
    "all_proxy",
    "NODE_TLS_REJECT_UNAUTHORIZED",
    "GOOGLE_CLOUD_UNIVERSE_DOMAIN",
)
"""What decides where the CLI sends the run's requests and credentials (the endpoint, the auth type, a proxy, TLS
checks), which a workspace's `.env` must not set for the run."""
_ASSIGNMENT = re.compile(r"^[\s\ufeff]*(?:export[\s\ufeff]+)?([\w.-]+)[\s\ufeff]*[=:]", re.MULTILINE)
r"""A variable a dotenv file sets (dotenv's `KEY=value`, `export KEY=value`, `KEY: value`), read over-inclusively:
JavaScript's `\s` is Python's and U+FEFF (a byte order mark before a key hid it, round 33)."""
_LINE_BREAK = re.compile("\r\n?|[\u2028\u2029]")
r"""What ends a line for dotenv besides `\n`: it reads `\r\n` and a lone `\r` as `\n`, and its multiline `^`
(JavaScript's) begins a line after U+2028 and U+2029 too, where Python's does not: a key after one was missed (round
33)."""


def _env_file(cwd: Path, home: Path, trusted: bool) -> Path | None:
    """The one environment file 0.61 loads for `cwd` (`findEnvFile`): up from `cwd`, the first `.gemini/.env` (only in
    a folder it trusts) or `.env`; None when the first is the user's own (at `home` or its `.gemini/`) or none."""
    home = home.resolve()
    for folder in (cwd, *cwd.parents):
        if folder == home:
            return None
        for candidate in ([folder / ".gemini" / ".env"] if trusted else []) + [folder / ".env"]:
            if candidate.exists():
                return candidate
    return None


LOCATION = "GOOGLE_CLOUD_LOCATION"
"""The Vertex AI region, which 0.61 takes from a `.env` even in a folder it does not trust and puts in its endpoint's
host name: `https://${location}-aiplatform.googleapis.com/` (the bundled SDK's `baseUrlFromProjectLocation`)."""
_REGION = re.compile(r"[A-Za-z0-9-]*")
"""A value of `LOCATION` that stays in the host name it is put in (a region: `us-central1`, `global`)."""


def _moved_location(text: str) -> bool:
    """Whether the dotenv `text` (its line breaks `\\n`) sets `LOCATION` to anything but a `_REGION`, read
    over-inclusively: each assignment's rest of the line, unquoted (a quote not closed there: moved) or cut at a `#`."""
    for match in _ASSIGNMENT.finditer(text):
        if match.group(1) != LOCATION:
            continue
        value = text[match.end() :].split("\n", 1)[0].strip()
        if value[:1] in ("'", '"', "`"):
            end = value.find(value[0], 1)
            value = value[1:end] if end > 0 else "/"
        else:
            value = value.split("#", 1)[0].strip()
        if not _REGION.fullmatch(value):
            return True
    return False


KEY_VARIABLES = ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_APPLICATION_CREDENTIALS")
"""The credentials the CLI authenticates with (`_launch.CREDENTIAL_ENV`): a workspace's `.env` must not supply them
to a run that gives none, or the run would go to the repository's account."""
UNTRUSTED_KEYS = ("GEMINI_API_KEY", "GOOGLE_API_KEY")
"""Those of `KEY_VARIABLES` 0.61 takes from a `.env` even in a folder it does not trust (`AUTH_ENV_VAR_WHITELIST`,
with the Google Cloud project and location, which only pick a project the run's own credentials must reach)."""


CLI_PREFIXES = ("GEMINI_", "OTEL_")
"""The CLI's own variables (its system prompt `GEMINI_SYSTEM_MD`, `GEMINI_DEFAULT_AUTH_TYPE`,
`GEMINI_SANDBOX_PROXY_COMMAND`, `GEMINI_DEBUG_LOG_FILE`, ...) and its telemetry exporter's (`OTEL_EXPORTER_OTLP_*`): a
trusted folder's `.env` sets them before the CLI reads them (round 33)."""


def _acts(name: str) -> bool:
    """Whether a trusted folder's `.env` setting `name` (not set for the run) acts behind the run's back: it moves the
    endpoint (`ENDPOINT_VARIABLES`), is one of the CLI's own (`CLI_PREFIXES`, the credentials aside: `KEY_VARIABLES`
    are judged by whether the run gives any), or makes bash or a program it starts run code (`code_variable`:
    `BASH_ENV`, `GIT_CONFIG_*`, `LD_PRELOAD`, `NODE_OPTIONS`, ...; a name no shell variable has, fail closed). The
    CLI's shell tool passes every variable but those named like a secret to the commands it runs (round 33)."""
    if name in KEY_VARIABLES:
        return False
    return name in ENDPOINT_VARIABLES or name.startswith(CLI_PREFIXES) or code_variable(name)


def env_file_refusal(folder: FolderTrust) -> tuple[str, str] | None:
    """Why the run must not start in `folder.cwd`: the workspace's environment file (`_env_file`) sets a variable
    the run's environment `folder.env` does not and 0.61 would take from it: one `_acts` names in a folder the CLI
    trusts (the endpoint, the CLI's own settings, what makes a command it runs run code), or, in a run that gives no
    credentials at all, one of `KEY_VARIABLES` (`UNTRUSTED_KEYS` in a folder it does not trust). The CLI loads that
    file into its environment at its start, every variable not set already (in a folder it does not trust only API
    keys and the Google Cloud project and location), so a repository's `GOOGLE_GEMINI_BASE_URL` would receive the
    run's requests and its key (measured: FakeGemini named there got them), its `BASH_ENV` would run with every command
    the model runs, and its `GEMINI_API_KEY` would run a keyless run on the repository's account (measured: FakeGemini
    got the repository's key, trusted folder or not); in any folder, `LOCATION` set to no region name would move a
    Vertex AI run's host (round 42, read from the bundled SDK). A run that gives a key keeps it (the file never
    replaces a variable set), so a `.env` holding an application's own `GOOGLE_API_KEY` is no matter then. The file
    is read as dotenv reads it (`_LINE_BREAK`, `_ASSIGNMENT`). Unsure (a file too large or unreadable): refused. The
    refusal's message and hint."""
    keyless = not any(folder.env.get(name) for name in KEY_VARIABLES)
    path = folder.env_file  # the file the CLI loads where it trusts the folder
    if path is None:  # a file system look only when there is one
        return None
    if not folder.trusted:
        path = folder.untrusted_env_file  # an untrusted folder's `.gemini/.env` is not read
        if path is None:
            return None
    watched = (KEY_VARIABLES if folder.trusted else UNTRUSTED_KEYS) if keyless else ()
    region = () if LOCATION in folder.env else (LOCATION,)
    try:
        text = read_regular(path, max_bytes=_MAX_BYTES).decode("utf-8", "replace")
    except OSError as exc:
        if exc.errno == errno.EISDIR:  # a virtual environment named `.env`: the CLI stops there and loads nothing
            return None
        fact = f"{path} cannot be read ({exc.strerror or exc})"
        found = list(watched + ENDPOINT_VARIABLES + region) if folder.trusted else list(watched + region)
    else:
        text = _LINE_BREAK.sub("\n", text)
        keys = _ASSIGNMENT.findall(text)
        found = sorted({m for m in keys if (m in watched or (folder.trusted and _acts(m))) and m not in folder.env})
        fact = f"{path} sets {', '.join(found)}"
        if region and not found and _moved_location(text):
            return (
                f"{path} sets {LOCATION} to no region name: the gemini CLI takes it from that file in any folder, "
                "trusted or not, and with Vertex AI sends the run's requests and credentials to "
                f"https://<{LOCATION}>-aiplatform.googleapis.com/, which such a value (a '/', '?', '#' or '@' in it) "
                "puts on another host",
                f"set {LOCATION} for the run yourself (the env option), or put a region name (us-central1) there",
            )
    if not found:
        return None
    untrust = (
        ", or have the CLI not trust the folder (GEMINI_CLI_TRUST_WORKSPACE=false in the env option: it then takes "
        "only API keys and the project from a .env, and refuses yolo and stdio MCP servers)"
    )
    if not (keyless and any(name in KEY_VARIABLES for name in found)):
        return (
            f"{fact}: the gemini CLI would load it in this folder, which it trusts, before anything the run allows: "
            "such a variable decides where it sends the run's requests and credentials, what it reads as its own "
            "settings (its system prompt, trust, telemetry, logs), or what bash and the programs its shell tool "
            "starts run",
            f"remove it from that file, set the variable for the run yourself (the env option){untrust}",
        )
    return (
        f"{fact}: the run gives the gemini CLI no credentials, so it would load them from this file and run on that "
        "account (a repository's own), sending it the run's prompts and what the model reads",
        "give the run its own key (GEMINI_API_KEY in the environment or the env option), or remove it from that file "
        "(a folder the CLI does not trust still gives it the file's API keys)",
    )


def special_file_refusal(folder: FolderTrust) -> tuple[str, str] | None:
    """Why the run must not start in `folder.cwd`: a file the CLI reads as it starts, in any folder, trusted or not
    (the workspace's `.gemini/settings.json`, read before the CLI decides whether to use it; the `.env` it would load,
    `_env_file`), is a FIFO or a device. Round 33: a FIFO there held the CLI's start (over ACP until unified's wait for
    `initialize` ran out, a minute), and node reads a link to `/dev/zero` without end. A directory is no matter (the
    CLI cannot read it and goes on, or refuses to start saying so). The refusal's message and hint."""
    cwd, home = folder.cwd, folder.home
    candidates: list[Path | None] = [] if cwd == home.resolve() else [cwd / ".gemini" / "settings.json"]
    candidates += [folder.env_file, folder.untrusted_env_file]
    for path in dict.fromkeys(path for path in candidates if path is not None):
        try:
            mode = path.stat().st_mode
        except OSError:
            continue
        if stat.S_ISFIFO(mode) or stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
            return (
                f"{path} {not_a_file(path)}: the gemini CLI reads that file as it starts, in any folder, and would "
                "wait on it or read it without end",
                "remove it, or put a regular file there",
            )
    return None


MEMORY_FILE = "GEMINI.md"
"""0.61's memory file name (`DEFAULT_CONTEXT_FILENAME`) where no settings name others (`context.fileName`)."""


def memory_names(folder: FolderTrust) -> tuple[str, ...]:
    """The memory file names the CLI may look for in `folder.cwd` (`getAllGeminiMdFilenames`), casefolded (a file
    system that ignores case finds `gemini.md` too): `MEMORY_FILE` and each `context.fileName` of the system's, the
    user's and the workspace's settings, all of them, wider than the one the CLI merges."""
    names = {MEMORY_FILE.casefold()}
    for path in (folder.system, folder.home / ".gemini" / "settings.json", folder.cwd / ".gemini" / "settings.json"):
        names.update(
            name.casefold() for name in _listed(_get(_settings(path), "context.fileName")) if isinstance(name, str)
        )
    return tuple(sorted(names))


def _ancestors(root: Path) -> list[Path]:
    """The folders above `root` whose memory files 0.61 reads for it (`getEnvironmentMemoryPaths`): up to the nearest
    one that holds `.git` (`findProjectRoot`, its default `context.memoryBoundaryMarkers`), none without one."""
    for depth, folder in enumerate((root, *root.parents)):
        if os.path.lexists(folder / ".git"):
            return list(root.parents)[:depth]
    return []


def memory_file_refusal(roots: Sequence[Path], names: Collection[str]) -> tuple[str, str] | None:
    """Why the run must not start in a folder the CLI trusts, whose folders are `roots` (its cwd first): an entry
    named as a memory file (`names`, `memory_names`) under a root, or in a folder above one up to its repository's
    top (`_ancestors`), is a link to a file outside every root, or leads to a FIFO or a device. Round 42, measured
    with 0.61: the CLI reads the workspace's `GEMINI.md` into its first request, and, when a tool reads a file in a
    subfolder, that subfolder's (its `@` imports are held inside the project, the file itself is not): through a link
    it sent a file from outside the run's folders to the model, on both transports, unasked. Without end, a FIFO
    holds the CLI's start. No link to a folder is followed (its files are reached where it leads, inside a root or
    not read). Unsure (more than `LINK_SCAN_MAX_ENTRIES` entries): refused. The refusal's message and hint.
    Blocking: call from a worker thread."""
    inside = [Path(os.path.realpath(root)) for root in roots]

    def problem(path: Path) -> str | None:
        try:
            mode = path.stat().st_mode
        except OSError:  # a link that leads nowhere: the CLI cannot read it either
            return None
        if stat.S_ISFIFO(mode) or stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
            return f"{path} {not_a_file(path)}"
        real = Path(os.path.realpath(path))
        if stat.S_ISREG(mode) and not any(real.is_relative_to(root) for root in inside):
            return f"{path} is a link to {real}, outside the run's folders"
        return None

    found: list[str] = []
    for folder in sorted({folder for root in roots for folder in _ancestors(root)}):
        try:
            with os.scandir(folder) as entries:  # each name read as `names` are, casefolded
                found += [why for entry in entries if entry.name.casefold() in names and (why := problem(Path(entry)))]
        except OSError:
            continue
    try:
        for _root, entry, _link in _files_under(roots, LINK_SCAN_MAX_ENTRIES):
            if entry.name.casefold() in names and (why := problem(Path(entry.path))):
                found.append(why)
    except _TooMany:
        found.append(
            f"{', '.join(map(str, roots))} hold more than {LINK_SCAN_MAX_ENTRIES:,} entries, too many for unified to "
            "look at every memory file"
        )
    if not found:
        return None
    return (
        f"{found[0]}: the gemini CLI reads each memory file ({', '.join(names)}) of a folder it trusts into the "
        "requests it sends the model, the run's folders' and those of each subfolder a tool reads in, unasked, "
        "and through a link reads what it leads to",
        "replace the link with a copy of the file, remove it, or have the CLI not trust the folder "
        "(GEMINI_CLI_TRUST_WORKSPACE=false in the env option: it then reads no memory file of the workspace, and "
        "refuses yolo and stdio MCP servers)",
    )
