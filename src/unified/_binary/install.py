"""Finding, checking and installing a pinned agent binary from npm: one `BinarySpec` per binary.

Where a binary is looked for, in order: the backend's option (`backend_options[spec.option]`), the
environment variable `spec.env_var`, a project-local `<clone>/<spec.local_dir>/` (made by
`scripts/setup` in a clone), the user data folder `unified install ...` installs into
(`$XDG_DATA_HOME/unified/<spec.name>` on Linux), then `PATH`. Its version comes from the npm
package's `package.json` when there is one (no start-up cost), else from `<binary> --version` run
with a throwaway home (a probe never writes into the user's). It must be in `spec.supported`.

`install` runs `npm install --prefix <folder> <package>@<version>`: into a folder of ours, never
globally, after checking that Node.js is there and new enough (a missing or old Node is
`NodeUnavailable`, saying what to install, before npm runs). npm's output goes to stderr.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import platformdirs

from unified._binary.environment import EnvPolicy, FileSignature, child_env, file_signature
from unified._executables import not_runnable, script_problem
from unified._files import open_regular
from unified._pgroup import ProcessGroup
from unified._redaction import is_secret
from unified.errors import BackendUnavailable, ConfigurationError

__all__ = [
    "NODE_HINT",
    "Binary",
    "BinarySpec",
    "NodeUnavailable",
    "Version",
    "find_binary",
    "install",
    "installed_version",
    "locate",
    "node_version",
    "probe_version",
]

Version = tuple[int, int, int]
NODE_HINT = "install Node.js 20 or newer (https://nodejs.org or your package manager), then run this again"
NPM_TIMEOUT_S = 900.0
"""A hang guard for `npm install`: a first install downloads tens (Claude Code: hundreds) of MB."""
PROBE_TIMEOUT_S = 30.0
_VERSION = re.compile(r"(\d+)\.(\d+)\.(\d+)")


def _text(version: Version) -> str:
    return ".".join(map(str, version))


@dataclass(frozen=True, slots=True)
class BinarySpec:
    """One agent binary as data: its npm package, the pinned version and where it may be found."""

    name: str
    """The backend's name: also the install folder's and the version messages' (`gemini-cli`)."""
    package: str
    """The npm package (`@google/gemini-cli`)."""
    version: str
    """The exact version `install` pins (`0.61.0`)."""
    supported: tuple[Version, Version]
    """The versions the backend drives: from the first (included) to the second (excluded)."""
    bin: str
    """The executable's name in `node_modules/.bin` and on PATH (`gemini`)."""
    env_var: str
    """The variable naming the binary's path (`UNIFIED_GEMINI_BIN`)."""
    option: str
    """The backend option naming it (`gemini_binary`)."""
    local_dir: str
    """The project-local install folder of a clone (`.gemini-cli`)."""
    install_command: str
    """The command that installs it (`unified install-gemini`)."""
    title: str
    """How messages name it (`the gemini CLI`)."""
    home_vars: tuple[str, ...] = ("HOME",)
    """Variables naming its home: a version probe points them at a throwaway folder."""
    probe_env: Mapping[str, str] = field(default_factory=dict)
    """More variables for the version probe (a quicker start)."""
    credential_env: tuple[str, ...] = ()
    """Variables carrying its credentials: left out of the version probe's environment (`--version` needs
    no key, and a key is best where nothing that does not need it can read it)."""
    min_node: Version = (20, 0, 0)
    """The oldest Node.js npm installs it with (and, when `runs_on_node`, that runs it)."""
    runs_on_node: bool = True
    """False for a native executable shipped through npm (Claude Code): Node installs it, never runs it."""

    @property
    def install_hint(self) -> str:
        return (
            f"install the supported CLI with `{self.install_command}` (Node.js {self.min_node[0]}+; "
            f"{self.package}@{self.version}), or point {self.env_var} / backend_options['{self.option}'] at it"
        )

    def user_prefix(self) -> Path:
        """The npm prefix `install` uses by default: the user data folder, where `find_binary` looks."""
        return Path(platformdirs.user_data_dir("unified", appauthor=False)) / self.name

    def binary_in(self, prefix: Path) -> Path:
        return prefix / "node_modules" / ".bin" / self.bin

    def user_installed(self) -> Path | None:
        """The binary `install` put into the user data folder, if it is there."""
        candidate = self.binary_in(self.user_prefix())
        return candidate if candidate.exists() else None

    def project_local(self) -> Path | None:
        """The binary in a clone's `local_dir`: above the working directory, or above this package."""
        for base in (Path.cwd(), *_package_parents()):
            candidate = self.binary_in(base / self.local_dir)
            if candidate.exists():
                return candidate
        return None


@functools.cache
def _package_parents() -> tuple[Path, ...]:
    """The folders above this package, resolved once: its files do not move while the process runs, and
    resolving them (a `lstat` per folder) was a tenth of what a run does before its binary starts."""
    return tuple(Path(__file__).resolve().parents)


@dataclass(frozen=True, slots=True)
class Binary:
    """A binary found and checked."""

    path: Path
    version: Version


class NodeUnavailable(BackendUnavailable):
    """Node.js is missing, broken or too old to install or run the binary."""


def require_node(spec: BinarySpec, binary: Path, env: Mapping[str, str]) -> tuple[str, ...] | None:
    """What starts `binary` (of `spec`) when it is a Node script its `#!` line runs through PATH (`#!/usr/bin/env
    node`): the Node.js executable and the line's arguments for it (`_node_line`), which the run puts before
    `binary`'s own argv; None when the kernel runs it itself. A `NodeUnavailable`
    (backend_unavailable, naming what to install) when no `node` is on the PATH of `env` (the child's): else the run
    would die with `/usr/bin/env: 'node': No such file`. `unified doctor` asks the same, so it never calls such a
    backend ready. The `node` on PATH may be a version manager's shim (asdf, nodenv, mise, volta), which picks the
    Node it runs by the folder it starts in (`.tool-versions`, `.node-version`, a `package.json`): through the `#!`
    line, a repository's `nodejs path:./bin` would run the repository's own program as the agent binary, before
    anything unified decides. So the Node that runs it is asked of the shim from the root folder (`_real_node`)."""
    signature = file_signature(binary)
    line = None if signature is None else _node_line(binary, signature)
    if line is None:
        return None
    found = _node_on(env.get("PATH"))
    if found is None:
        raise NodeUnavailable(
            f"Node.js was not found on PATH; {spec.title} ({binary}) needs Node.js {spec.min_node[0]}+",
            hint=NODE_HINT,
            details={"missing": "node", "binary": str(binary)},
        )
    return (_real_node(found, env), *line)


_NODE_FOUND: dict[str | None, str] = {}
"""Per PATH, the `node` last found on it."""


def _node_on(path: str | None) -> str | None:
    """A `node` on `path`, None when there is none. The last one found is checked again (one `access`),
    not looked for in every folder of the PATH before every run; a node that went away is looked for anew."""
    known = _NODE_FOUND.get(path)
    if known is not None and os.access(known, os.X_OK):
        return known
    found = shutil.which("node", path=path)
    if found is None:
        _NODE_FOUND.pop(path, None)
    elif len(_NODE_FOUND) < 16 or path in _NODE_FOUND:
        _NODE_FOUND[path] = found
    return found


_NATIVE = (b"\x7fELF", b"\xcf\xfa\xed\xfe", b"\xce\xfa\xed\xfe", b"\xca\xfe\xba\xbe")
"""How an executable the kernel loads itself begins (ELF; Mach-O 64, 32 and universal): a Node.js binary, not a
script or another program's link."""


def _native_node(path: str) -> bool:
    """Whether `path` is Node.js itself: an executable named node (`node`, `nodejs`) the kernel loads, not a shim
    (a script: asdf's, nodenv's; a link to another program: mise's, volta's)."""
    if not os.path.basename(path).startswith("node"):
        return False
    try:
        with open_regular(Path(path)) as handle:
            return handle.read(4) in _NATIVE
    except OSError:
        return False


_REAL_NODE: dict[tuple[str, FileSignature | None, str | None], str] = {}
"""Per `node` found on PATH (its path and `file_signature`, which a link repointed or a file replaced changes) and
PATH, the Node.js that runs: looked at once per process, not at every run's start (its real path and first bytes
were ~40 us of each; a shim's answer, a process)."""


def _real_node(found: str, env: Mapping[str, str]) -> str:
    """The Node.js executable `found` (the `node` on PATH) runs: itself (its real path) when it is Node.js, else what
    it names as `process.execPath` when asked from the root folder (`/`, `PWD` too), where no repository's version
    file can steer it; a `NodeUnavailable` saying so when it names none."""
    key = (found, file_signature(Path(found)), env.get("PATH"))
    known = _REAL_NODE.get(key)
    if known is not None and os.access(known, os.X_OK):  # a shim's answer may have gone since: asked again
        return known
    real = os.path.realpath(found)
    node = real if _native_node(real) else _asked_from_root(found, env)
    if len(_REAL_NODE) < 16:
        _REAL_NODE[key] = node
    return node


def _asked_from_root(shim: str, env: Mapping[str, str]) -> str:
    """The Node.js `shim` names as its `process.execPath` when started in the root folder (`/`, `PWD` too), or a
    `NodeUnavailable` saying it named none."""
    answer = _program_output([shim, "-p", "process.execPath"], {**env, "PWD": os.sep}, cwd=os.sep)
    said = answer[1].strip() if answer is not None else ""
    if answer is None or answer[0] != 0 or not os.path.isabs(said) or not _native_node(said):
        why = "did not answer" if answer is None else f"answered {said[:200]!r}"
        raise NodeUnavailable(
            f"the node on PATH ({shim}) is not Node.js but a launcher (a version manager's shim?), and asked from "
            f"{os.sep} which Node.js it runs, it {why}: unified starts the agent binary with Node.js itself, never "
            "through a shim that picks its Node by the folder the run is in (a repository could name its own)",
            hint="give your version manager a global Node.js version (`asdf set -u nodejs ...`, `mise use -g "
            f"node@...`), or put Node.js itself first on PATH; {NODE_HINT}",
            details={"node": shim},
        )
    return said


@functools.lru_cache(maxsize=16)
def _node_line(binary: Path, signature: FileSignature) -> tuple[str, ...] | None:
    """The arguments `binary`'s `#!` line gives Node.js when it runs it through PATH (`#!/usr/bin/env node`: none;
    `#!/usr/bin/env -S node --flag`: `--flag`); None for any other program (as it is: its `file_signature`)."""
    try:
        with open_regular(binary) as handle:  # a FIFO there is refused, never waited on
            first = handle.readline(256)
    except OSError:
        return None
    words = first[2:].decode(errors="replace").split() if first.startswith(b"#!") else []
    if not words or os.path.basename(words[0]) != "env":
        return None
    words = words[2:] if words[1:2] == ["-S"] else words[1:]
    return tuple(words[1:]) if words and words[0] == "node" else None


def find_binary(spec: BinarySpec, explicit: str | os.PathLike[str] | None, env: Mapping[str, str]) -> Path:
    """The binary's path, looked for in the order of the module docstring."""
    for source, value in ((f"backend_options['{spec.option}']", explicit), (spec.env_var, env.get(spec.env_var))):
        if value:
            path = Path(value).expanduser()
            problem = not_runnable(path)
            if problem is not None:
                raise BackendUnavailable(f"{source} points at {path}, {problem}", hint=spec.install_hint)
            return path
    local = spec.project_local() or spec.user_installed()
    if local is not None:
        return local
    found = shutil.which(spec.bin, path=env.get("PATH"))
    if found is None:
        raise BackendUnavailable(f"the `{spec.bin}` binary was not found", hint=spec.install_hint)
    return Path(found)


_probed: dict[tuple[str, str, float], Version] = {}


def _package_version(spec: BinarySpec, binary: Path) -> str | None:
    """The version in the npm package's package.json, if `binary` belongs to `spec.package`."""
    for parent in binary.resolve().parents:
        manifest = parent / "package.json"
        if manifest.is_file():
            try:
                data = json.loads(manifest.read_text())
            except (OSError, ValueError, RecursionError):
                return None
            return str(data.get("version")) if data.get("name") == spec.package else None
    return None


def probe_version(spec: BinarySpec, binary: Path, env: Mapping[str, str], timeout: float | None = None) -> Version:
    """The binary's version (cached per path and modification time). `--version` is given `timeout` seconds, by
    default `PROBE_TIMEOUT_S` (a caller's deadline may leave less: `unified doctor`'s)."""
    timeout = PROBE_TIMEOUT_S if timeout is None else timeout
    key = (spec.name, str(binary), binary.stat().st_mtime)
    if key in _probed:
        return _probed[key]
    text = _package_version(spec, binary)
    if text is None:
        try:
            with tempfile.TemporaryDirectory(prefix=f"unified-{spec.name}-version-") as home:
                # `--version` needs no key: none of the binary's credentials, nothing that looks like a secret
                parent = {
                    name: value
                    for name, value in env.items()
                    if name not in spec.credential_env and not is_secret(name, value)
                }
                probe = child_env(
                    EnvPolicy(), parent=parent, extra=spec.probe_env, home=Path(home), home_vars=spec.home_vars
                )
                answer = _program_output([str(binary), "--version"], probe, timeout)
        except OSError as exc:
            problem = script_problem(binary, env)
            said = f"{binary} cannot run, {problem}" if problem else f"could not run {binary} --version: {exc}"
            raise BackendUnavailable(said, hint=spec.install_hint) from exc
        if answer is None:
            raise BackendUnavailable(
                f"{binary} --version did not answer within {timeout:.3g} s, so it was stopped: that binary "
                "hangs (a broken install, a wrapper script waiting for input, or a network call at start)",
                hint=f"run `{binary} --version` alone to see where it stops; {spec.install_hint}",
                details={"binary": str(binary), "timeout_s": timeout},
            )
        text = answer[1]  # its exit status is not asked: a version printed is the version
    match = _VERSION.search(text or "")
    if match is None:
        problem = script_problem(binary, env)
        if problem is not None:
            raise BackendUnavailable(f"{binary} cannot run, {problem}", hint=spec.install_hint)
        raise BackendUnavailable(f"{binary} did not report a version ({text!r})", hint=spec.install_hint)
    version = (int(match[1]), int(match[2]), int(match[3]))
    _probed[key] = version
    return version


def _program_output(
    argv: list[str], env: Mapping[str, str], timeout: float | None = None, cwd: str = os.sep
) -> tuple[int, str] | None:
    """The exit status of `argv` (`program --version`, a shim asked which Node it runs) and what it printed on
    stdout; None when it has not exited within `timeout` seconds (by default `PROBE_TIMEOUT_S`). It runs in `cwd`, the
    root folder by default: a launcher that reads the folder it starts in (a Node version manager's shim) reads no
    repository's files there. It runs in a process group of its own, killed whole at the
    deadline: `subprocess.run(timeout=)` killed the program alone and then read its stdout to the end, so a wrapper
    script whose child held that pipe (`sleep`, a node that hangs) kept `unified doctor`, `unified install` and a
    run's start waiting for as long as the child lived, and left it running after."""
    with subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",  # bytes that are no UTF-8 are no version: said by the caller, not a UnicodeDecodeError
        env=env,
        cwd=cwd,
        start_new_session=True,
    ) as child:
        group = ProcessGroup(child.pid, lambda: child.returncode is not None)
        try:
            out, _ = child.communicate(timeout=PROBE_TIMEOUT_S if timeout is None else max(timeout, 0.0))
        except subprocess.TimeoutExpired:
            return None
        finally:
            group.signal(signal.SIGKILL)  # what it left behind too (a child that outlived it holds no pipe open)
            group.close()
            for stream in (child.stdout, child.stderr):
                if stream is not None:
                    stream.close()  # never read to its end: a member that escaped the group may still hold it
            child.wait()
    return child.returncode, out


def locate(spec: BinarySpec, explicit: str | os.PathLike[str] | None, env: Mapping[str, str]) -> Binary:
    """The binary to run, checked against the supported versions."""
    path = find_binary(spec, explicit, env)
    version = probe_version(spec, path, env)
    low, high = spec.supported
    if not low <= version < high:
        raise BackendUnavailable(
            f"{path} is {spec.name} {_text(version)}; unified supports {_text(low)} up to (not including) "
            f"{_text(high)}",
            hint=spec.install_hint,
        )
    return Binary(path, version)


# --- installing -----------------------------------------------------------------------------------


def node_version(spec: BinarySpec, env: Mapping[str, str]) -> Version:
    """Node's version; `NodeUnavailable` when Node is missing, broken or older than `spec.min_node`."""
    needs = f"{spec.title} needs Node.js {spec.min_node[0]}+"
    node = shutil.which("node", path=env.get("PATH"))
    if node is None:
        raise NodeUnavailable(f"Node.js was not found on PATH; {needs}", hint=NODE_HINT)
    try:
        answer = _program_output([node, "--version"], env)
    except OSError as exc:
        raise NodeUnavailable(f"{node} --version failed: {exc}", hint=NODE_HINT) from exc
    if answer is None:
        raise NodeUnavailable(
            f"{node} --version did not answer within {PROBE_TIMEOUT_S:g} s, so it was stopped: that node hangs "
            "(a version manager's shim waiting for input, a broken install)",
            hint=f"run `{node} --version` alone to see where it stops; {NODE_HINT}",
        )
    code, said = answer
    match = _VERSION.search(said)
    if code != 0 or match is None:
        raise NodeUnavailable(f"{node} did not report a version ({said.strip()!r})", hint=NODE_HINT)
    version = (int(match[1]), int(match[2]), int(match[3]))
    if version < spec.min_node:
        raise NodeUnavailable(
            f"Node.js {_text(version)} at {node} is too old; {spec.title} needs {spec.min_node[0]}+", hint=NODE_HINT
        )
    return version


def installed_version(spec: BinarySpec, prefix: Path) -> str | None:
    """The version of `spec.package` installed under the npm prefix `prefix`, if any."""
    manifest = prefix / "node_modules" / Path(*spec.package.split("/")) / "package.json"
    try:
        return str(json.loads(manifest.read_text())["version"])
    except (OSError, ValueError, RecursionError, KeyError):
        return None


def install(spec: BinarySpec, prefix: Path, env: Mapping[str, str]) -> tuple[Path, bool]:
    """Install `spec.package@spec.version` under the npm prefix `prefix` (idempotent).

    Returns the binary and whether npm ran. `NodeUnavailable` or `ConfigurationError` (a prefix that cannot be
    made) before npm runs; `BackendUnavailable` when npm is missing or fails (its output, on stderr, says why).
    """
    binary = spec.binary_in(prefix)
    if installed_version(spec, prefix) == spec.version and binary.exists():
        return binary, False
    node_version(spec, env)
    npm = shutil.which("npm", path=env.get("PATH"))
    if npm is None:
        raise NodeUnavailable("npm was not found on PATH (it comes with Node.js)", hint=NODE_HINT)
    try:
        prefix.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # a file in the way, a folder under /proc: it was exit 70, "a bug in unified"
        raise ConfigurationError(
            f"the install folder {prefix} cannot be made: {exc.strerror or exc} ({exc.filename or prefix})",
            hint="pass --prefix a folder this user can make and write (or make that one), then run this again",
        ) from None
    command = [npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund", f"{spec.package}@{spec.version}"]
    try:
        done = subprocess.run(
            command, stdout=sys.stderr, stderr=sys.stderr, env=dict(env), timeout=NPM_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired as exc:
        raise BackendUnavailable(
            f"npm install did not finish within {NPM_TIMEOUT_S:g} s", hint="check the network and run this again"
        ) from exc
    if done.returncode != 0 or not binary.exists():
        # an npm that exits 0 and installs nothing (a wrapper, an npm config that skips installs) "failed (exit 0)"
        why = f"exit {done.returncode}" if done.returncode else f"it exited 0 but left no {binary}"
        raise BackendUnavailable(f"`{' '.join(command)}` failed ({why})", hint="see npm's output above; run this again")
    return binary, True
