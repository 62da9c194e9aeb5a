"""Bad input round 18, time limits: `unified run --timeout inf` (and `1e400`, which Python reads as infinity) was
taken and meant no limit, as did `ExecuteParams(total_timeout_s=inf)` and `idle_timeout_s=inf`; leaving the limit
out (None) is what says "no limit", and a limit nobody can reach is more likely a slip. Each is now refused,
saying what is accepted: the CLI exits 2 with one line, the library raises pydantic's `ValidationError`."""

from __future__ import annotations

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from unified import ExecuteParams
from unified._cli import main as cli

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("given", ["inf", "1e400", "Infinity"])
def test_run_refuses_a_timeout_of_infinity_saying_what_is_accepted(given: str) -> None:
    result = CliRunner().invoke(cli.app, ["run", "--backend", "generate-content", "--timeout", given, "hi"])
    assert result.exit_code == 2, result.output
    assert "Invalid value for '--timeout'" in result.output
    assert "leave the option out for no limit" in result.output


@pytest.mark.parametrize("field", ["total_timeout_s", "idle_timeout_s"])
@pytest.mark.parametrize("value", [float("inf"), 1e400])
def test_params_refuse_a_time_limit_of_infinity(field: str, value: float) -> None:
    with pytest.raises(ValidationError, match="finite number"):
        ExecuteParams(prompt="hi", backend="generate-content", **{field: value})
