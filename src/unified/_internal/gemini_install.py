"""Where `unified install-gemini` puts the pinned gemini CLI for an installed package.

A clone has its project-local `.gemini-cli/`; a `pip install`ed `unified` has none, so the CLI goes
into the user's data directory (`$XDG_DATA_HOME/unified/gemini-cli` on Linux), where the
adapter's binary lookup and `unified doctor` find it. Never a global npm install.
"""

from __future__ import annotations

from pathlib import Path

import platformdirs


def user_install_prefix() -> Path:
    """The npm prefix `unified install-gemini` installs into by default."""
    return Path(platformdirs.user_data_dir("unified", appauthor=False)) / "gemini-cli"


def user_installed_binary() -> Path | None:
    """The `gemini` that `unified install-gemini` installed, if it is there."""
    candidate = user_install_prefix() / "node_modules" / ".bin" / "gemini"
    return candidate if candidate.exists() else None
