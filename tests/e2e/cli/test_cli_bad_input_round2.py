

FULL_DISK = Path("/dev/full")
"""Every write fails with ENOSPC: a full disk under a redirected stdout, without filling one."""


@pytest.mark.skipif(not FULL_DISK.exists(), reason="needs /dev/full (Linux)")
@pytest.mark.parametrize(
    ("args", "running"),
    [
        (["run", "hi", "--backend", "scripted"], True),
        (["run", "hi", "--backend", "scripted", "--json"], True),
        (["capabilities"], False),
        (["capabilities", "--json"], False),
        (["schema"], False),
        (["sessions", "list"], False),
    ],
)
def test_stdout_on_a_full_disk_is_one_error_line_and_exit_74(
    args: list[str | bytes], running: bool, isolated_home: Path, tmp_path: Path
) -> None:
    with FULL_DISK.open("w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "unified", *args],
            cwd=tmp_path,
            env={**os.environ, "UNIFIED_DATA_DIR": str(isolated_home / "unified-data")},
            stdout=full,
            stderr=subprocess.PIPE,
            timeout=HANG_GUARD_S,
            check=False,
        )
    err = done.stderr.decode(errors="replace")
    assert done.returncode == 74, err
    assert err.startswith("error: cannot write the output to stdout: No space left on device"), err
    assert ("the run was cancelled" in err) == running
    assert "unexpected" not in err
    assert "Traceback" not in err
    assert len(err.splitlines()) == 1, err


def test_a_closed_stdout_is_one_error_line_and_exit_74(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "unified", "run", "hi", "--backend", "scripted"],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        timeout=HANG_GUARD_S,
        check=False,
        preexec_fn=lambda: os.close(1),  # as `unified run ... >&-` starts it
    )
    err = done.stderr.decode(errors="replace")
    assert done.returncode == 74, err
    assert err.startswith("error: stdout is closed"), err
    assert "Traceback" not in err
