"""A throwaway PostgreSQL server for tests and benchmarks: real binaries, a temp dir, 127.0.0.1 only.

    with PostgresServer() as server:
        store = PostgresSessionStore(server.create_database())

The binaries come from `$UNIFIED_PG_BIN` (a directory holding `initdb` and `postgres`), else the
`pgserver` wheel (a pip package that ships them; in unified's `test` extra), else a system
install (`pg_config --bindir`, Debian's `/usr/lib/postgresql/<n>/bin`, PATH). The server refuses
to run as root, so under root it runs as `nobody` in a directory given to that user. It listens
on a free TCP port of 127.0.0.1 (no Unix socket), trusts local connections, and skips fsync: its
data lives only as long as the `with` block.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import uuid
from pathlib import Path
from types import TracebackType
from typing import Any

BIN_ENV = "UNIFIED_PG_BIN"
START_TIMEOUT_S = 60.0
"""Hang guard for the server's start (it takes about a second): far above normal on a busy machine."""
_NOBODY = 65534


def postgres_bin_dir() -> Path:
    """The directory holding `initdb` and `postgres`; RuntimeError saying how to install them if none."""
    candidates: list[Path] = []
    if os.environ.get(BIN_ENV):
        candidates.append(Path(os.environ[BIN_ENV]))
    spec = importlib.util.find_spec("pgserver")  # found, not imported: its import registers exit hooks
    if spec is not None and spec.submodule_search_locations:
        candidates.append(Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin")
    pg_config = shutil.which("pg_config")
    if pg_config:
        with contextlib.suppress(OSError, subprocess.CalledProcessError):
            found = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True, check=True)
            candidates.append(Path(found.stdout.strip()))
    candidates += sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True)
    on_path = shutil.which("initdb")
    if on_path:
        candidates.append(Path(on_path).resolve().parent)
    for directory in candidates:
        if (directory / "initdb").is_file() and (directory / "postgres").is_file():
            return directory
    raise RuntimeError(
        "no PostgreSQL server binaries found: pip install pgserver (unified's test extra), "
        f"apt-get install postgresql, or set {BIN_ENV} to the directory holding initdb and postgres"
    )


def _open_to_others(path: Path) -> bool:
    """Whether a user other than its owner can reach and run `path` (every parent searchable)."""
    try:
        if not path.stat().st_mode & stat.S_IXOTH:
            return False
        return all(parent.stat().st_mode & stat.S_IXOTH for parent in path.resolve().parents)
    except OSError:
        return False


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class PostgresServer:
    """One PostgreSQL server process, started by `start()` (or `with`), stopped and deleted by `stop()`."""

    def __init__(self) -> None:
        self.bin_dir = postgres_bin_dir()
        self.port = 0
        self._root: Path | None = None
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """The URL of the `postgres` database (the superuser `postgres`, no password)."""
        return self.url_of("postgres")

    def url_of(self, database: str) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def _as_server_user(self) -> dict[str, Any]:
        return {"user": _NOBODY, "group": _NOBODY, "extra_groups": []} if os.geteuid() == 0 else {}

    def start(self) -> PostgresServer:
        self._root = Path(tempfile.mkdtemp(prefix="unified-pg-"))
        if os.geteuid() == 0:
            os.chown(self._root, _NOBODY, _NOBODY)
            if not _open_to_others(self.bin_dir / "postgres"):
                self.bin_dir = self._copy_install()
        data = self._root / "data"
        subprocess.run(
            [self.bin_dir / "initdb", "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"],
            check=True,
            capture_output=True,
            **self._as_server_user(),
        )
        self.port = _free_port()
        log = (self._root / "server.log").open("wb")
        settings = ["fsync=off", "full_page_writes=off", "max_connections=200"]
        self._process = subprocess.Popen(
            [str(self.bin_dir / "postgres"), "-D", str(data), "-p", str(self.port), "-h", "127.0.0.1", "-k", ""]
            + [part for setting in settings for part in ("-c", setting)],
            stdout=log,
            stderr=subprocess.STDOUT,
            **self._as_server_user(),
        )
        log.close()
        self._wait_ready()
        return self

    def _copy_install(self) -> Path:
        """A copy of the installation `nobody` can run (the original sits under a private directory,
        e.g. a checkout in root's home); the binaries find their libraries relative to themselves."""
        assert self._root is not None
        install = self.bin_dir.parent
        site = self._root / "install"
        shutil.copytree(install, site / install.parent.name / install.name, symlinks=True)
        # A wheel's binaries load their bundled libraries from `$ORIGIN/../../../<package>.libs`.
        bundled = install.parent.parent / f"{install.parent.name}.libs"
        if bundled.is_dir():
            shutil.copytree(bundled, site / bundled.name, symlinks=True)
        for path in (site, *site.rglob("*")):
            os.chown(path, _NOBODY, _NOBODY, follow_symlinks=False)
        return site / install.parent.name / install.name / self.bin_dir.name

    def _wait_ready(self) -> None:
        """Until the server accepts a query (it says so by answering, not after a fixed wait)."""
        import time

        import psycopg

        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                psycopg.connect(self.url, connect_timeout=5).close()
                return
            except psycopg.OperationalError:
                assert self._process is not None
                if self._process.poll() is not None or time.monotonic() > deadline:
                    log = (self._root / "server.log").read_text(errors="replace") if self._root else ""
                    self.stop()
                    raise RuntimeError(f"the PostgreSQL test server did not start:\n{log[-2000:]}") from None
                time.sleep(0.05)  # polling readiness; the outcome does not depend on this interval

    def create_database(self) -> str:
        """A new empty database; returns its URL."""
        import psycopg

        name = f"t_{uuid.uuid4().hex[:16]}"
        with psycopg.connect(self.url, autocommit=True) as connection:
            connection.execute(f"CREATE DATABASE {name}")
        return self.url_of(name)

    def stop(self) -> None:
        if self._process is not None:
            self._process.send_signal(signal.SIGINT)  # "fast" shutdown; SIGTERM would wait for clients
            try:
                self._process.wait(timeout=START_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
            self._process = None
        if self._root is not None:
            shutil.rmtree(self._root, ignore_errors=True)
            self._root = None

    def __enter__(self) -> PostgresServer:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.stop()
