"""Red team, round 22.

Holes (each test marked SUCCEEDED before fails on the code before its fix):

- package and environment runners were read as the command itself, so `uv run rm x`, `uvx rm x`, `npx rm x`,
  `npm exec rm x`, `pnpm dlx|exec`, `yarn dlx|exec`, `bunx`, `bun x`, `pipx|poetry|pdm|hatch|rye|pipenv|pixi run`,
  `conda|mamba|micromamba run`, `nix shell|develop -c`, `nix-shell --run`, `devbox run`, `direnv exec`,
  `asdf|pyenv|rbenv|... exec`, `mise|rtx exec --`, `bundle exec`, `rustup run`, `volta run` passed a deny rule for
  `rm` under a broader allow rule. Now the command a runner starts is a part of its own (`SimpleCommand.covered`)
  that deny and ask rules judge, while the runner's own part keeps every word, so an allow rule naming the runner
  (`uv run pytest`) covers what it did before. An option the reader does not know (`npx -c 'rm x'`), `nix run`'s
  package program or hatch's `ENV:cmd` makes that part unknown: asked where a deny or ask rule may match;
- Claude Code's WebFetch of a name that resolves to this machine or its network (`attacker.example` with an A record
  of 169.254.169.254, this machine's own host name) ran under an allow rule: `local_target` reads names without
  looking them up. Now a name is resolved (`_urls.resolves_locally`, 3 s at most); a private answer, or none without
  a proxy to resolve it, is asked (rule `local-network`);
- a hostile repository's own `.git/config` (`core.fsmonitor = <command>`, `core.pager = <command>`): Codex's
  read-only `git grep`, unasked in every mode (plan too), ran the monitor command (e2e on the real codex), as did an
  allowed `git status` or `git diff` in any backend's commands or unified's shell, and git writing to a terminal ran
  the pager. Now every binary's child (`GIT_SAFETY`) and unified's shell (`SHELL_SETTINGS`) set
  `core.fsmonitor=false` (and the binaries `core.pager=cat`; unified's shell has `GIT_PAGER=cat`) as command-line
  configuration, which outranks the repository's.

Checked and kept as it was: unified's own shell passes no proxy variable of the host (a proxy password reaches none
of its commands); the binaries' commands still see one (docs/backends/*.md say so and why).

Attacks that held are kept below their section as pins.
"""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

import pytest

from tests.e2e.codex.conftest import run_codex
from tests.security.test_red_team_round7 import _claude_answer
from tests.security.test_red_team_round21 import DENY_RM, SHELL
from unified import _urls
from unified._binary.environment import EnvPolicy, child_env
from unified.events import PermissionDecision
from unified.testing import FakeOpenAI, FunctionCall, ModelTurn
from unified.tools import Policy
from unified.tools._paths import Workspace
from unified.tools._shell import ShellConfig
from unified.tools._shell_syntax import parse

pytestmark = [pytest.mark.anyio]


def _allowing(prefix: str, deny: str | None = None) -> Policy:
    text = f'[[rule]]\ntoolName = "run_shell_command"\ncommandPrefix = "{prefix}"\ndecision = "allow"\npriority = 100\n'
    if deny is not None:
        text += (
            f'[[rule]]\ntoolName = "run_shell_command"\ncommandPrefix = "{deny}"\ndecision = "deny"\npriority = 500\n'
        )
    return Policy.default().with_toml(text)


# 1. package and environment runners


@pytest.mark.parametrize(
    "command",
    [
        "uv run rm x",
        "uv run --with foo -- rm x",
        "uv --directory . run --no-sync rm x",
        "uv tool run rm x",
        "uvx rm x",
        "npx rm x",
        "npx -y --package=rm rm x",
        "npm exec rm x",
        "npm exec --yes -- rm x",
        "npm x rm x",
        "npm exe rm x",
        "pnpm dlx rm x",
        "pnpm exec rm x",
        "pnpm -r --filter app exec rm x",
        "pnpx rm x",
        "pnpm sudo rm x",
        "pnpm -r --filter app sh -c 'rm x'",
        "yarn dlx rm x",
        "yarn exec rm x",
        "bunx rm x",
        "bun x rm x",
        "pipx run rm x",
        "poetry run rm x",
        "poetry -C . run rm x",
        "pdm run rm x",
        "hatch run rm x",
        "hatch env run -- rm x",
        "rye run rm x",
        "pipenv run rm x",
        "pixi run -e dev rm x",
        "conda run -n base rm x",
        "mamba run rm x",
        "micromamba run -p /opt/env rm x",
        "nix shell nixpkgs#hello -c rm x",
        "nix develop --command rm x",
        "nix-shell -p hello --run 'ls; rm x'",
        "devbox run rm x",
        "direnv exec . rm x",
        "asdf exec rm x",
        "pyenv exec rm x",
        "rbenv exec rm x",
        "mise exec node@20 -- rm x",
        "mise x -- rm x",
        "rtx exec -- rm x",
        "bundle exec rm x",
        "rustup run stable rm x",
        "volta run rm x",
        "uv run bash -c 'rm x'",
        "npx sudo rm x",
        "NPX rm x",
    ],
)
def test_a_deny_rule_holds_through_a_package_runner(command: str) -> None:
    """SUCCEEDED before: the runner was the command, `rm` one of its operands, and the blanket allow ran it. (npm runs
    a command it finds on PATH, no package fetched, and takes a command's unique abbreviation: `npm exec rm f`,
    `npm exe rm f` and `npx --offline rm f` each removed `f`, measured with npm 11.19 offline.)"""
    verdict = Policy.default().with_toml(DENY_RM).evaluate(SHELL, {"command": command}, "default")
    assert verdict.decision == "deny", command


@pytest.mark.parametrize(
    "command",
    [
        "npx -c 'rm x'",
        "npm exec --call 'rm x'",
        "uv run --env-file .env rm x",
        "uv --unknown-option run rm x",
        "pnpm dlx --shell-mode 'rm x'",
        "conda run --cwd /tmp rm x",
        "hatch run test:rm x",
        "nix run nixpkgs#coreutils -- x",
        "mise exec node@20 rm x",
        "mise x -c 'rm x'",
        "uv run $CMD x",
        "bun exec 'rm x'",
    ],
)
def test_a_runner_option_the_reader_does_not_follow_is_asked(command: str) -> None:
    """SUCCEEDED before: allowed under the blanket allow beside a deny rule (`npx -c` runs a shell script, `conda run
    --cwd` elsewhere, `nix run` a package's program); now the command it runs is unknown, so the deny rule may match:
    asked (denied outright where the script is read, `mise x -c 'rm x'`)."""
    verdict = Policy.default().with_toml(DENY_RM).evaluate(SHELL, {"command": command}, "default")
    assert verdict.decision in ("ask_user", "deny"), command
    assert verdict.decision == "ask_user" or command == "mise x -c 'rm x'"


@pytest.mark.parametrize(
    ("prefix", "command"),
    [
        ("uv run pytest", "uv run pytest -q tests"),
        ("uv run", "uv run --weird-option pytest"),
        ("npx prettier", "npx prettier --write ."),
        ("bundle exec rspec", "bundle exec rspec spec/a_spec.rb"),
        ("poetry run", "poetry run pytest"),
        ("pnpm exec", "pnpm exec eslint ."),
        ("hatch run", "hatch run test:cov"),
    ],
)
def test_an_allow_rule_naming_the_runner_still_covers_it(prefix: str, command: str) -> None:
    """The pin beside it: the runner's own part keeps its words, so an allow rule naming it allows what it did
    before (no deny or ask rule here to doubt an option it does not know)."""
    assert _allowing(prefix).evaluate(SHELL, {"command": command}, "default").decision == "allow", command


@pytest.mark.parametrize(
    ("prefix", "command", "deny"),
    [
        ("uv run pytest", "uv run pytest -q", "rm"),
        ("npm test", "npm test", "rm"),
        ("uv pip", "uv pip install -r requirements.txt", "rm"),
        ("pnpm", "pnpm rm lodash", "rm"),
        ("pnpm", "pnpm --version", "rm"),
        ("pnpm install", "pnpm install --frozen-lockfile", "rm"),
        ("nix develop", "nix develop", "rm"),
        ("yarn dlx", "yarn dlx create-vite app", "git push"),
    ],
)
def test_a_runner_command_beside_an_unrelated_deny_rule_still_runs(prefix: str, command: str, deny: str) -> None:
    """The pin: a deny rule that names something else asks nothing more of an allowed runner (a verb that runs no
    command, `uv pip`, `npm test`, is read as before)."""
    assert _allowing(prefix, deny).evaluate(SHELL, {"command": command}, "default").decision == "allow", command


@pytest.mark.parametrize(
    ("deny", "command"), [("npx", "npx prettier ."), ("uv run", "uv run pytest"), ("uvx", "uvx ruff")]
)
def test_a_runner_that_is_denied_by_name_stays_denied(deny: str, command: str) -> None:
    """The pin: a deny rule naming the runner (`npx`, `uv run`) matches its own part as before."""
    policy = Policy.default().with_toml(DENY_RM.replace('"rm"', f'"{deny}"'))
    assert policy.evaluate(SHELL, {"command": command}, "default").decision == "deny"


def test_a_runner_and_its_command_are_both_parts() -> None:
    """What the reader returns: the runner's words, then the command it starts, marked covered, via the runner."""
    runner, inner = parse("uv run --with x pytest -q")
    assert runner.words == ("uv", "run", "--with", "x", "pytest", "-q")
    assert not runner.covered
    assert (inner.words, inner.via, inner.covered) == (("pytest", "-q"), ("uv run",), True)


def test_a_runner_kill_of_every_process_is_not_allowed_by_an_allow_rule_for_kill() -> None:
    """The pin: an allow rule for `kill` never covered `npx kill -9 -1` (the runner is the command it names)."""
    verdict = _allowing("kill").evaluate(SHELL, {"command": "npx kill -9 -1"}, "default")
    assert verdict.decision == "ask_user"


# 2. Claude Code's WebFetch of a name that resolves to this machine or its network

ALLOW_FETCH = '[[rule]]\ntoolName = "web_fetch"\ndecision = "allow"\npriority = 900\n'

PROXIES = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")


@pytest.fixture
def answers(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[str]]:
    """The lookups `resolves_locally` makes, answered from this table (a name not in it does not resolve)."""
    table: dict[str, list[str]] = {}

    async def addresses(host: str, port: int) -> list[str]:
        if host not in table:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return table[host]

    monkeypatch.setattr(_urls, "_addresses", addresses, raising=False)
    for name in PROXIES:
        monkeypatch.delenv(name, raising=False)
    return table


@pytest.mark.parametrize(
    ("host", "address"),
    [
        ("metadata.attacker.example", "169.254.169.254"),
        ("intranet.attacker.example", "10.1.2.3"),
        ("loop.attacker.example", "127.0.0.1"),
        ("v6.attacker.example", "::1"),
        ("mapped.attacker.example", "::ffff:192.168.0.1"),
        ("linklocal.attacker.example", "fe80::1%eth0"),
    ],
)
async def test_a_claude_web_fetch_of_a_name_resolving_locally_is_asked(
    tmp_path: Path, answers: dict[str, list[str]], host: str, address: str
) -> None:
    """SUCCEEDED before: the name is none `local_target` knows, the allow rule answered allow, and the CLI fetched
    the address from this machine. Now it is asked; nobody to ask here, so denied."""
    answers[host] = ["93.184.215.14", address]
    body, decision = await _claude_answer(
        tmp_path, "WebFetch", {"url": f"https://{host}/latest/", "prompt": "x"}, Policy.default().with_toml(ALLOW_FETCH)
    )
    assert body["behavior"] == "deny", host
    assert decision.rule == "local-network"
    assert address in (decision.reason or "")


async def test_a_claude_web_fetch_of_a_name_that_does_not_resolve_is_asked(
    tmp_path: Path, answers: dict[str, list[str]]
) -> None:
    """SUCCEEDED before (allowed): where the name leads is not known, and the CLI resolves it on this machine too."""
    body, decision = await _claude_answer(
        tmp_path,
        "WebFetch",
        {"url": "https://nowhere.example/", "prompt": "x"},
        Policy.default().with_toml(ALLOW_FETCH),
    )
    assert body["behavior"] == "deny"
    assert decision.rule == "local-network"
    assert "could not be resolved" in (decision.reason or "")


async def test_a_claude_web_fetch_of_this_machines_own_name_is_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SUCCEEDED before: this machine's host name (in /etc/hosts as 127.0.0.1 here; a container's private address,
    or no answer, elsewhere: asked in every case), really looked up."""
    for name in PROXIES:
        monkeypatch.delenv(name, raising=False)
    url = f"http://{socket.gethostname()}:8080/admin"
    assert _urls.local_target(url) is None
    body, decision = await _claude_answer(
        tmp_path, "WebFetch", {"url": url, "prompt": "x"}, Policy.default().with_toml(ALLOW_FETCH)
    )
    assert body["behavior"] == "deny"
    assert decision.rule == "local-network"


@pytest.mark.parametrize("url", ["https://example.com/", "https://docs.python.org/3/library/", "https://8.8.8.8/"])
async def test_a_claude_web_fetch_of_a_name_resolving_publicly_still_runs(
    tmp_path: Path, answers: dict[str, list[str]], url: str
) -> None:
    """The pin: a public answer is fetched unasked under the allow rule (an address is not looked up)."""
    answers["example.com"] = ["93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"]
    answers["docs.python.org"] = ["151.101.0.223"]
    body, decision = await _claude_answer(
        tmp_path, "WebFetch", {"url": url, "prompt": "x"}, Policy.default().with_toml(ALLOW_FETCH)
    )
    assert body == {"behavior": "allow"}
    assert decision.decision == "allow"


async def test_with_a_proxy_a_name_that_does_not_resolve_here_still_runs(
    tmp_path: Path, answers: dict[str, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pin: behind a proxy the proxy resolves the name, so no answer here asks nothing more."""
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.corp.example:3128")
    body, _ = await _claude_answer(
        tmp_path, "WebFetch", {"url": "https://example.com/", "prompt": "x"}, Policy.default().with_toml(ALLOW_FETCH)
    )
    assert body == {"behavior": "allow"}


# 3. a proxy password in the environment of unified's own commands


@pytest.mark.parametrize("name", ["HTTPS_PROXY", "all_proxy", "http_proxy"])
def test_a_proxy_url_with_a_password_reaches_no_command_of_unifieds_shell(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """Held (a pin): unified's own shell passes no proxy variable of the host, and the value, a secret of the run
    (`_redaction`), would be left out if it did."""
    monkeypatch.setenv(name, "http://user:s3cret-pass@proxy.corp.example:3128")
    env = ShellConfig(workspace=Workspace(tmp_path), env_allowlist=("*PROXY*", "*proxy*")).environment()
    assert all("s3cret-pass" not in value for value in env.values())


# 4. a hostile repository's own .git/config: core.fsmonitor and core.pager


def _hostile_repository(ws: Path, marker: Path) -> None:
    """A workspace that is a git repository whose own `.git/config` names a command as its filesystem monitor and as
    its pager (a repository unpacked with its `.git`: no model wrote it, so no protected path was asked)."""
    env = {"PATH": os.defpath, "HOME": str(ws.parent), "GIT_CONFIG_NOSYSTEM": "1"}
    for command in (
        ["git", "init", "-q", "."],
        ["git", "add", "a.txt"],
        ["git", "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "x"],
        ["git", "config", "core.fsmonitor", f"touch {marker}.fsmonitor; echo"],
        ["git", "config", "core.pager", f"touch {marker}.pager; cat"],
    ):
        subprocess.run(command, cwd=ws, env=env, check=True, capture_output=True, timeout=60)


def test_every_child_and_command_gets_git_to_run_no_repository_monitor_or_pager(tmp_path: Path) -> None:
    """SUCCEEDED before (the e2e below): only safe.bareRepository was set. Now both outrank a repository's config."""
    parameters = child_env(EnvPolicy(allow=frozenset()), parent={})["GIT_CONFIG_PARAMETERS"]
    assert "'core.fsmonitor'='false'" in parameters
    assert "'core.pager'='cat'" in parameters
    env = ShellConfig(workspace=Workspace(tmp_path)).environment()
    pairs = {env[f"GIT_CONFIG_KEY_{at}"]: env[f"GIT_CONFIG_VALUE_{at}"] for at in range(int(env["GIT_CONFIG_COUNT"]))}
    assert pairs == {"safe.bareRepository": "explicit", "core.fsmonitor": "false"}


@pytest.mark.e2e  # runs git
@pytest.mark.parametrize("command", ["git grep hello", "git status --short", "git diff"])
@pytest.mark.parametrize("who", ["binary", "unified"])
def test_a_git_command_in_a_hostile_repository_runs_none_of_its_commands(
    tmp_path: Path, command: str, who: str
) -> None:
    """SUCCEEDED before: `git grep hello` (Codex's read-only command, unasked in every mode), run with the environment
    a binary's child gets, ran the repository's `core.fsmonitor` command (the marker made); with a terminal, its
    `core.pager` too. Now git runs neither."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("hello\n")
    marker = tmp_path / "marker"
    _hostile_repository(ws, marker)
    if who == "binary":
        env = child_env(EnvPolicy(allow=frozenset()), parent={"PATH": os.defpath}, home=tmp_path, home_vars=("HOME",))
    else:
        env = ShellConfig(workspace=Workspace(ws), env={"PATH": os.defpath}).environment()
    env["GIT_CONFIG_NOSYSTEM"] = "1"
    leader, follower = os.openpty()  # a terminal, as Codex's exec_command gives with `tty`
    try:
        done = subprocess.run(
            ["/bin/sh", "-c", command], cwd=ws, env=env, stdin=follower, stdout=follower, stderr=follower, timeout=60
        )
    finally:
        os.close(follower)
        os.close(leader)
    assert done.returncode == 0
    assert not (tmp_path / "marker.fsmonitor").exists(), command
    assert not (tmp_path / "marker.pager").exists(), command


@pytest.mark.e2e  # runs codex and git
async def test_codex_read_only_git_grep_in_a_hostile_repository_runs_none_of_its_commands(tmp_path: Path) -> None:
    """SUCCEEDED before: Codex's read-only `git grep` ran unasked in plan mode, and git ran the repository's
    `core.fsmonitor` command."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("hello\n")
    marker = tmp_path / "marker"
    _hostile_repository(ws, marker)
    calls = [FunctionCall(name="exec_command", args={"cmd": "git grep hello"})]
    async with FakeOpenAI([ModelTurn(function_calls=calls), ModelTurn(text="done")]) as server:
        events = await run_codex(server, ws, approval_mode="plan")
    [decision] = [e for e in events if isinstance(e, PermissionDecision)]
    assert decision.decision == "allow"  # a read, as before
    assert not (tmp_path / "marker.fsmonitor").exists()
