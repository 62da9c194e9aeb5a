"""An API backend's `backend_options` are parsed once for its options check and its run (`ParsedOptions`),
and again whenever they are others (a run continued by failover brings its own)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pytest

from unified._adapters.generate_content._backend import GenerateContentBackend
from unified._adapters.interactions._backend import InteractionsBackend
from unified._internal import api_options, options
from unified.backends import Backend
from unified.errors import ConfigurationError
from unified.types import BackendOptions, ExecuteParams

BACKENDS: dict[str, Callable[[ExecuteParams], Backend]] = {
    "generate-content": GenerateContentBackend,
    "interactions": InteractionsBackend,
}


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_the_check_and_the_run_read_one_parse(backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[object] = []
    real = options.parse_options

    def counting(options_type: type[Any], raw: Mapping[str, object] | BackendOptions, name: str) -> Any:
        calls.append(raw)
        return real(options_type, raw, name)

    monkeypatch.setattr(api_options, "parse_options", counting)
    params = ExecuteParams(
        prompt="p", backend=backend, backend_options={"api_key": "k" * 39, "base_url": "http://127.0.0.1:9"}
    )
    chosen = BACKENDS[backend](params)
    chosen.unsupported_options(params)
    chosen.unsupported_options(params)
    run_options = chosen._options.resolved(params)  # type: ignore[attr-defined]  # what run() reads
    assert len(calls) == 1
    assert run_options.api_key == "k" * 39  # resolved: its auth worked out from that one parse
    continued = params.model_copy(update={"backend_options": {"api_key": "k" * 39}})
    chosen.unsupported_options(continued)
    assert len(calls) == 2  # other options: parsed anew


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_a_bad_option_is_refused_every_time(backend: str) -> None:
    params = ExecuteParams(prompt="p", backend=backend, backend_options={"no_such_option": 1})
    chosen = BACKENDS[backend](params)
    for _ in range(2):
        with pytest.raises(ConfigurationError):
            chosen.unsupported_options(params)
