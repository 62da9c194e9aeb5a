"""The request body built once per content (`WireRequest`) is the body google-genai builds each turn."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from google import genai
from google.genai import _common, models, types

from unified._adapters.generate_content._stream import WIRE_PATH, WireRequest

pytestmark = pytest.mark.skipif(not WIRE_PATH, reason="this google-genai moved the internals: the public path runs")


def _sdk_body(api: Any, model: str, contents: list[types.Content], config: types.GenerateContentConfig) -> Any:
    """What `generate_content_stream` sends, built the SDK's way: all of it, every time."""
    parameters = types._GenerateContentParameters(model=model, contents=contents, config=config)
    convert = (
        models._GenerateContentParameters_to_vertex if api.vertexai else models._GenerateContentParameters_to_mldev
    )
    request = convert(api, parameters, None, parameters)
    request.pop("config", None)
    return _common.encode_unserializable_types(_common.convert_to_dict(request))


def _history() -> list[types.Content]:
    call = types.FunctionCall(id="c1", name="read_file", args={"file_path": "a.txt", "n": [1, 2.5, None]})
    return [
        types.Content(
            role="user",
            parts=[
                types.Part(text="go"),
                types.Part(inline_data=types.Blob(mime_type="image/png", data=b"\x89PNG\x00\xff")),
            ],
        ),
        types.Content(
            role="model",
            parts=[
                types.Part(text="thinking about it", thought=True, thought_signature=b"sig\x00"),
                types.Part(function_call=call, thought_signature=b"\x01\x02"),
            ],
        ),
        types.Content(
            role="user",
            parts=[
                types.Part(
                    function_response=types.FunctionResponse(id="c1", name="read_file", response={"output": "é\n"})
                )
            ],
        ),
        types.Content(role="model", parts=[types.Part(text="done")]),
    ]


def _config() -> types.GenerateContentConfig:
    read = types.FunctionDeclaration(
        name="read_file", description="Read a file.", parameters_json_schema={"type": "object"}
    )
    return types.GenerateContentConfig(
        system_instruction="be brief",
        tools=[types.Tool(function_declarations=[read])],
        temperature=0.5,
        thinking_config=types.ThinkingConfig(include_thoughts=True, thinking_budget=128),
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
    )


@pytest.fixture(params=["gemini-api", "vertex"])
def api(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Any:
    if request.param == "vertex":
        client = genai.Client(vertexai=True, api_key="test-key")
    else:
        client = genai.Client(api_key="test-key")
    return client.aio.models._api_client


def test_each_turn_sends_what_the_sdk_would_build_from_the_whole_history(api: Any) -> None:
    history, config, wire = _history(), _config(), WireRequest()
    for turns in range(1, len(history) + 1):
        assert wire.body(api, "gemini-2.5-flash", history[:turns], config) == _sdk_body(
            api, "gemini-2.5-flash", history[:turns], config
        )


def test_bytes_are_sent_as_base64_text(api: Any) -> None:
    body = WireRequest().body(api, "gemini-2.5-flash", _history()[:1], _config())
    blob = body["contents"][0]["parts"][1]["inlineData"]
    assert base64.urlsafe_b64decode(blob["data"] + "=" * (-len(blob["data"]) % 4)) == b"\x89PNG\x00\xff"


def test_a_history_rewritten_rather_than_extended_is_converted_again(api: Any) -> None:
    history, config, wire = _history(), _config(), WireRequest()
    wire.body(api, "gemini-2.5-flash", history, config)
    rewritten = [*history[:2], types.Content(role="user", parts=[types.Part(text="something else")])]
    assert wire.body(api, "gemini-2.5-flash", rewritten, config) == _sdk_body(
        api, "gemini-2.5-flash", rewritten, config
    )
    assert (
        wire.body(api, "gemini-2.5-flash", history[:1], config)["contents"]
        == _sdk_body(api, "gemini-2.5-flash", history[:1], config)["contents"]
    )


def test_a_new_config_or_model_is_converted_again(api: Any) -> None:
    history, wire = _history(), WireRequest()
    wire.body(api, "gemini-2.5-flash", history, _config())
    other = types.GenerateContentConfig(system_instruction="be long", max_output_tokens=10)
    assert wire.body(api, "gemini-2.5-pro", history, other) == _sdk_body(api, "gemini-2.5-pro", history, other)


def test_each_body_is_a_new_dict_that_the_sdk_may_strip(api: Any) -> None:
    """`_build_request` deletes `_url` and `_query` from the body it is given: the next turn still has them."""
    history, config, wire = _history(), _config(), WireRequest()
    first = wire.body(api, "gemini-2.5-flash", history, config)
    for key in [k for k in first if k.startswith("_")]:
        del first[key]
    assert wire.body(api, "gemini-2.5-flash", history, config) == _sdk_body(api, "gemini-2.5-flash", history, config)


def test_runs_sharing_a_config_and_client_share_its_conversion_and_each_sends_the_sdk_body(api: Any) -> None:
    """The config's wire form is kept across runs (each run has its own WireRequest), per config
    object and client: a second run sends the SDK's body, and another config is converted anew."""
    history, config = _history(), _config()
    first = WireRequest().body(api, "gemini-2.5-flash", history, config)
    second = WireRequest().body(api, "gemini-2.5-flash", history, config)
    assert second == first == _sdk_body(api, "gemini-2.5-flash", history, config)
    assert second["tools"] is first["tools"]  # converted once
    other = _config().model_copy(update={"temperature": 0.9})
    body = WireRequest().body(api, "gemini-2.5-flash", history, other)
    assert body == _sdk_body(api, "gemini-2.5-flash", history, other)
    assert body["generationConfig"]["temperature"] == 0.9


def test_a_client_s_kept_conversions_go_with_it() -> None:
    import gc
    import weakref

    from unified._adapters.generate_content import _stream

    api = genai.Client(api_key="test-key").aio.models._api_client
    WireRequest().body(api, "gemini-2.5-flash", _history()[:1], _config())
    assert api in _stream._rests
    kept = len(_stream._rests)
    client = weakref.ref(api)
    del api
    gc.collect()
    assert client() is None  # the cache did not keep the client alive
    # (at most: other tests' clients in this worker may go in the same collection)
    assert len(_stream._rests) <= kept - 1


def test_contents_of_text_alone_are_sent_as_the_sdk_sends_them(api: Any) -> None:
    """Text-only contents are written without the SDK's converters: the body must not tell."""
    contents = [
        types.Content(role="user", parts=[types.Part(text="go"), types.Part(text="")]),
        types.Content(parts=[types.Part(text="no role")]),
        types.Content(role="model", parts=[types.Part(text="é, 🙂, \u0000")]),
        types.Content(role="model", parts=[types.Part(text="a", thought=True)]),  # not text alone
        types.Content(role="user", parts=[types.Part(text="a", thought_signature=b"a")]),  # nor this
        types.Content(role="user", parts=[]),
        types.Content(role="user"),
    ]
    body = WireRequest().body(api, "gemini-2.5-flash", contents, _config())
    assert body["contents"] == _sdk_body(api, "gemini-2.5-flash", contents, _config())["contents"]


def test_contents_of_text_alone_are_stored_as_their_dump() -> None:
    """The session stores a text-only content as written directly: the very dump pydantic gives."""
    from unified._adapters.generate_content._stream import text_content_json

    contents = [
        types.Content(role="user", parts=[types.Part(text="go"), types.Part(text="")]),
        types.Content(parts=[types.Part(text="no role")]),
        types.Content(role="model", parts=[types.Part(text="é, 🙂, \u0000")]),
    ]
    for content in contents:
        assert text_content_json(content) == content.model_dump(mode="json", exclude_none=True)
    others = [
        types.Content(role="model", parts=[types.Part(text="a", thought=True)]),
        types.Content(role="user", parts=[types.Part(text="a", thought_signature=b"a")]),
        types.Content(role="user", parts=[]),
        types.Content(role="user"),
    ]
    assert [text_content_json(content) for content in others] == [None] * len(others)
