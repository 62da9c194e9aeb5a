"""Shared test setup: the two tiers, asyncio and trio for every async test, and no test sees a real home.

Tiers (README "Tests"): a test is `e2e` when it lives under tests/e2e/ or tests/bench/ or carries
`@pytest.mark.e2e` itself (it runs a real binary, a real subprocess or a real HTTP round trip
through a backend); every other test is `unit`, and a unit test that starts a subprocess fails at
once, so a new test file lands in the tier of the folder it lives in and cannot drift out of it.
"""

from __future__ import annotations

import multiprocessing.util
import os
import subprocess
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.harness.homes import point_home_at
from tests.harness.slow_first import DURATIONS, read_durations, slow_first

if TYPE_CHECKING:
    from tests.harness.postgres_server import PostgresServer

TESTS_ROOT = Path(__file__).parent
E2E_FOLDERS = frozenset({"e2e", "bench"})

# No test may probe the GCE metadata server (a non-loopback address) while looking for Vertex AI
# credentials; google-auth reads this once, when it is first imported.
os.environ["NO_GCE_CHECK"] = "true"

_AUTH_ENV = (
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "GOOGLE_GENAI_USE_VERTEXAI",
    "GOOGLE_GENAI_USE_GCA",
    "GOOGLE_CLOUD_PROJECT",
    "GOOGLE_CLOUD_LOCATION",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "GOOGLE_GEMINI_BASE_URL",
    "GOOGLE_VERTEX_BASE_URL",
    "CODE_ASSIST_ENDPOINT",
    "GEMINI_MODEL",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "CODEX_HOME",
    "UNIFIED_CODEX_HOME",
)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--slow-tests",
        type=Path,
        default=DURATIONS,
        help="the slowest tests of a measured run, started first with --dist load (tests/harness/slow_first.py)",
    )


def pytest_configure_node(node: Any) -> None:
    """Tells each xdist worker whether tests are spread one by one: a worker's own `dist` option always reads "no"."""
    node.workerinput["slow_first"] = node.config.getoption("dist") == "load"


@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> Generator[None]:
    """Marks each test's tier before `-m` selects by it; then, on an xdist worker spreading tests one by one, lays
    the selected tests out slowest modules first (`tests.harness.slow_first` says why)."""
    for item in items:
        top = item.path.relative_to(TESTS_ROOT).parts[0]
        if top in E2E_FOLDERS and item.get_closest_marker("e2e") is None:
            item.add_marker(pytest.mark.e2e)
        if item.get_closest_marker("e2e") is None:
            item.add_marker(pytest.mark.unit)
    yield
    workerinput = getattr(config, "workerinput", {})
    if workerinput.get("slow_first"):
        seconds = read_durations(config.getoption("slow_tests"))
        order = slow_first([item.nodeid for item in items], seconds, workerinput["workercount"])
        items[:] = [items[i] for i in order]


@pytest.fixture(autouse=True)
def unit_tier_spawns_nothing(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every way to start a process (subprocess, asyncio, trio and anyio all end in `Popen._execute_child`;
    multiprocessing in `spawnv_passfds` or `os.fork`) fails in a unit test, saying where the test belongs."""
    if request.node.get_closest_marker("unit") is None:
        return

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(
            f"{request.node.nodeid} starts a process but is in the unit tier: "
            "mark it @pytest.mark.e2e or move it under tests/e2e/"
        )

    monkeypatch.setattr(subprocess.Popen, "_execute_child", refuse)
    monkeypatch.setattr(multiprocessing.util, "spawnv_passfds", refuse)
    monkeypatch.setattr(os, "fork", refuse)
    monkeypatch.setattr(os, "posix_spawn", refuse)
    monkeypatch.setattr(os, "posix_spawnp", refuse)


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(autouse=True)
def no_resting_backends() -> Iterator[None]:
    """`auto` routing starts from no backend resting: a run that failed over marks the backend it left as
    resting for this process (`note_gave_out`, up to a minute), which a later test of the same worker
    would otherwise inherit (a routing test then saw generate-content passed over)."""
    from unified import _routing

    _routing._GAVE_OUT.clear()
    yield
    _routing._GAVE_OUT.clear()


@pytest.fixture(autouse=True)
def no_remembered_homes() -> Iterator[None]:
    """The binaries' homes a run recorded (`_protected.credential_home`: a caller's `home`/`codex_home`, protected for
    the rest of the process) are forgotten between tests: a later test of the same worker would otherwise find an
    earlier test's transcripts among the credential files (`xargs cat` asked for a file of another test's home)."""
    from unified.tools import _protected

    _protected._homes.clear()
    _protected._credential_cache = None
    yield
    _protected._homes.clear()
    _protected._credential_cache = None


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A throwaway HOME, GEMINI_CLI_HOME, XDG tree (unified's data dir in it), no auth from the developer's shell."""
    home = tmp_path / "home"
    home.mkdir()
    point_home_at(monkeypatch, home)
    for name in _AUTH_ENV:
        monkeypatch.delenv(name, raising=False)
    return home


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """One throwaway PostgreSQL server per xdist worker (its own port and temp dir), stopped at the end."""
    from tests.harness.postgres_server import PostgresServer

    with PostgresServer() as server:
        yield server


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> str:
    """A fresh, empty database on the worker's server, for one test."""
    return postgres_server.create_database()
