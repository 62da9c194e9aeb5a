"""Images of a carried history that the Anthropic and OpenAI APIs cannot take.

A conversation's `ImagePart` may hold any media type (`image/svg+xml`, `application/pdf`: a Gemini session
keeps what its API took, a file may say anything), but Anthropic's `image` block and OpenAI's `input_image`
take PNG, JPEG, GIF and WebP only: written as one, another type made the API refuse the request (HTTP 400)
on every turn of the continued session, and codex's retry left such an image out of the turn without a word.
Claude Code and Codex carry each such image as a text note saying what it was, and the run says so first
(an `unsupported_option` warning on `history`).
"""

from __future__ import annotations

from unified.conversations import Conversation, ImagePart, UserTurn

__all__ = ["TAKEN_IMAGE_TYPES", "image_note", "images_not_taken", "taken"]

TAKEN_IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
"""The image types the Anthropic Messages API and the OpenAI Responses API take (the prompt's `ImageInput` too)."""


def taken(part: ImagePart) -> bool:
    """Whether Anthropic and OpenAI take `part` as an image (a media type is case-insensitive)."""
    return part.mime_type.lower() in TAKEN_IMAGE_TYPES


def image_note(part: ImagePart, provider: str) -> str:
    """The text that stands in for an image `provider` cannot take."""
    return (
        f"[an attachment ({part.mime_type}, {len(part.data):,} bytes) {provider} cannot take as an image: "
        "not carried over]"
    )


def images_not_taken(conversation: Conversation | None, provider: str) -> str | None:
    """What the warning says of the images a user's turn of `conversation` holds that `provider` cannot take,
    or None when there are none (the model's own images are told as text already, as any backend tells them)."""
    found = [
        f"turn {number}: {part.mime_type}"
        for number, turn in enumerate(conversation.turns if conversation is not None else [])
        if isinstance(turn, UserTurn)
        for part in turn.parts
        if isinstance(part, ImagePart) and not taken(part)
    ]
    if not found:
        return None
    shown = ", ".join(found[:5]) + (f" and {len(found) - 5} more" if len(found) > 5 else "")
    return (
        f"the history holds {len(found)} image(s) of a type {provider} does not take (PNG, JPEG, GIF and WebP "
        f"only): {shown}; each is carried as a text note saying what it was"
    )
