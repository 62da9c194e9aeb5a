"""docs/params.md is generated from the parameter models, so it lists every field as the code has it."""

from __future__ import annotations

from pathlib import Path

from unified._cli.reference import MODELS, params_markdown, undocumented

PAGE = Path(__file__).resolve().parents[2] / "docs" / "params.md"


def test_the_page_is_the_models_as_they_are() -> None:
    assert PAGE.read_text(encoding="utf-8") == params_markdown(), (
        "docs/params.md is stale: run `python -m unified._cli.reference > docs/params.md`"
    )


def test_every_field_says_what_it_does() -> None:
    assert undocumented() == []  # a new field needs a description= (it is the page's text)


def test_every_field_of_execute_params_is_on_the_page() -> None:
    text = PAGE.read_text(encoding="utf-8")
    for model in MODELS:
        assert f"## `{model.__name__}`" in text
        for name in model.model_fields:
            assert f"| `{name}` |" in text, f"{model.__name__}.{name}"
