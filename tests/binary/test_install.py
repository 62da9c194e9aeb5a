"""Finding and checking a pinned binary from its `BinarySpec` (no subprocess: versions from package.json)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from unified._binary.install import (
    NODE_HINT,
    BinarySpec,
    NodeUnavailable,
    find_binary,
    install,
    installed_version,
    locate,
    node_version,
)
from unified.errors import BackendUnavailable

SPEC = BinarySpec(
    name="fake-cli",
    package="@example/fake-cli",
    version="1.2.3",
    supported=((1, 2, 0), (1, 3, 0)),
    bin="fake",
    env_var="UNIFIED_FAKE_BIN",
    option="fake_binary",
    local_dir=".fake-cli",
    install_command="unified install fake-cli",
    title="the fake CLI",
)


def npm_layout(prefix: Path, version: str = "1.2.3") -> Path:
    """What `npm install --prefix` leaves: the package with its manifest, and `.bin/<bin>` linking to it."""
    package = prefix / "node_modules" / "@example" / "fake-cli"
    package.mkdir(parents=True)
    (package / "package.json").write_text(json.dumps({"name": SPEC.package, "version": version}))
    (package / "cli.js").write_text("#!/usr/bin/env node\n")
    (package / "cli.js").chmod(0o755)  # npm makes a package's bin executable
    binary = prefix / "node_modules" / ".bin" / "fake"
    binary.parent.mkdir(parents=True)
    binary.symlink_to(package / "cli.js")
    return binary


def test_the_option_comes_first_and_a_missing_path_names_its_source(tmp_path: Path) -> None:
    binary = npm_layout(tmp_path / "opt")
    assert find_binary(SPEC, binary, {"UNIFIED_FAKE_BIN": "/elsewhere"}) == binary
    with pytest.raises(BackendUnavailable) as caught:
        find_binary(SPEC, tmp_path / "nope", {})
    assert "backend_options['fake_binary'] points at" in caught.value.message
    with pytest.raises(BackendUnavailable) as caught:
        find_binary(SPEC, None, {"UNIFIED_FAKE_BIN": str(tmp_path / "nope")})
    assert caught.value.message.startswith("UNIFIED_FAKE_BIN points at")


@pytest.mark.parametrize(
    ("kind", "said"),
    [
        ("directory", "which is a directory, not the executable"),
        ("plain_file", "which is not executable (mode -rw-r--r--"),
    ],
)
def test_a_named_path_that_cannot_run_says_why_before_it_is_run(tmp_path: Path, kind: str, said: str) -> None:
    """Was "could not run ... --version: [Errno 13] Permission denied" for both, from the version probe."""
    path = tmp_path / "fake"
    if kind == "directory":
        path.mkdir()
    else:
        path.write_text("#!/bin/sh\n")
        path.chmod(0o644)
    for explicit, env in ((path, {}), (None, {"UNIFIED_FAKE_BIN": str(path)})):
        with pytest.raises(BackendUnavailable) as caught:
            locate(SPEC, explicit, env)
        assert f"points at {path}, {said}" in caught.value.message
        assert caught.value.hint == SPEC.install_hint


def test_then_the_user_data_folder_then_path(tmp_path: Path) -> None:
    on_path = tmp_path / "bin" / "fake"
    on_path.parent.mkdir()
    on_path.write_text("#!/bin/sh\n")
    on_path.chmod(0o755)
    assert find_binary(SPEC, None, {"PATH": str(on_path.parent)}) == on_path
    installed = npm_layout(SPEC.user_prefix())
    assert SPEC.user_installed() == installed
    assert find_binary(SPEC, None, {"PATH": str(on_path.parent)}) == installed


def test_nothing_found_says_how_to_install(tmp_path: Path) -> None:
    with pytest.raises(BackendUnavailable) as caught:
        find_binary(SPEC, None, {"PATH": str(tmp_path)})
    assert caught.value.message == "the `fake` binary was not found"
    assert caught.value.hint == (
        "install the supported CLI with `unified install fake-cli` (Node.js 20+; @example/fake-cli@1.2.3), "
        "or point UNIFIED_FAKE_BIN / backend_options['fake_binary'] at it"
    )


def test_the_version_comes_from_the_package_and_must_be_supported(tmp_path: Path) -> None:
    good = npm_layout(tmp_path / "good", "1.2.9")
    assert locate(SPEC, good, {}).version == (1, 2, 9)
    old = npm_layout(tmp_path / "old", "1.1.0")
    with pytest.raises(BackendUnavailable) as caught:
        locate(SPEC, old, {})
    assert "is fake-cli 1.1.0; unified supports 1.2.0 up to (not including) 1.3.0" in caught.value.message


def test_an_installed_version_needs_no_node(tmp_path: Path) -> None:
    binary = npm_layout(tmp_path / "prefix")
    assert installed_version(SPEC, tmp_path / "prefix") == "1.2.3"
    assert install(SPEC, tmp_path / "prefix", {"PATH": str(tmp_path / "no-node")}) == (binary, False)
    assert installed_version(SPEC, tmp_path / "empty") is None


def test_without_node_install_says_what_to_install(tmp_path: Path) -> None:
    with pytest.raises(NodeUnavailable) as caught:
        install(SPEC, tmp_path / "prefix", {"PATH": str(tmp_path)})
    assert caught.value.message == "Node.js was not found on PATH; the fake CLI needs Node.js 20+"
    assert caught.value.hint == NODE_HINT
    assert isinstance(caught.value, BackendUnavailable)
    assert not (tmp_path / "prefix").exists()
    with pytest.raises(NodeUnavailable):
        node_version(SPEC, {"PATH": os.devnull})
