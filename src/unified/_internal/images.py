"""Images of a carried history that a provider's API cannot take.

A conversation's `ImagePart` may hold any media type (`image/svg+xml`, `application/pdf`: a Gemini session
keeps what its API took, a file may say anything), but Anthropic's `image` block and OpenAI's `input_image`
take PNG, JPEG, GIF and WebP only: written as one, another type made the API refuse the request (HTTP 400)
on every turn of the continued session, and codex's retry left such an image out of the turn without a word.
Gemini's `inline_data` takes more (`GEMINI_INLINE_TYPES`: PDF, text, audio, video) but not every type
(`image/svg+xml`, `application/zip`: "Unsupported MIME type", HTTP 400 on every turn), and the interactions
API's `image` item images only (`GEMINI_IMAGE_TYPES`).
An image with no bytes, or whose bytes are another image type than it says (a PNG saying `image/jpeg`), is refused
by every provider as the prompt's `ImageInput` is (`check_params`); in a history it was sent as it was (bad input
round 25: an empty `inlineData`, a JPEG that is a PNG), so it is not taken either.
Each backend carries such an image as a text note saying what it was, and the run says so first
(an `unsupported_option` warning on `history`).
"""

from __future__ import annotations

from unified.conversations import Conversation, ImagePart, UserTurn
from unified.types import image_type

__all__ = [
    "GEMINI_IMAGE_TYPES",
    "GEMINI_INLINE_TYPES",
    "TAKEN_IMAGE_TYPES",
    "attachment_note",
    "image_note",
    "images_not_taken",
    "stored_not_taken",
    "taken",
]

TAKEN_IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
"""The image types the Anthropic Messages API and the OpenAI Responses API take (the prompt's `ImageInput` too)."""

GEMINI_IMAGE_TYPES = TAKEN_IMAGE_TYPES | {"image/heic", "image/heif"}
"""The image types Gemini lists (PNG, JPEG, WebP, HEIC, HEIF), and GIF, which the prompt's `ImageInput` takes on
every backend."""

GEMINI_INLINE_TYPES = GEMINI_IMAGE_TYPES | {
    "application/pdf",
    "text/plain",
    "text/html",
    "text/css",
    "text/csv",
    "text/xml",
    "text/rtf",
    "text/markdown",
    "text/javascript",
    "application/x-javascript",
    "text/x-python",
    "application/x-python",
    "audio/wav",
    "audio/mp3",
    "audio/mpeg",
    "audio/aiff",
    "audio/aac",
    "audio/ogg",
    "audio/flac",
    "video/mp4",
    "video/mpeg",
    "video/mov",
    "video/avi",
    "video/x-flv",
    "video/mpg",
    "video/webm",
    "video/wmv",
    "video/3gpp",
}
"""The media types the Gemini API documents for `inline_data` (images, documents, audio, video)."""

_ACCEPTED = {
    TAKEN_IMAGE_TYPES: "PNG, JPEG, GIF and WebP only",
    GEMINI_IMAGE_TYPES: "PNG, JPEG, GIF, WebP, HEIC and HEIF only",
    GEMINI_INLINE_TYPES: "images, PDF, text, audio and video of the types Gemini lists only",
}


def taken(part: ImagePart, accepted: frozenset[str] = TAKEN_IMAGE_TYPES) -> bool:
    """Whether a provider taking the `accepted` types takes `part` (default: Anthropic's and OpenAI's images; a
    media type is case-insensitive): not when it is empty or its bytes are another image type (`_unfit`)."""
    return part.mime_type.lower() in accepted and _unfit(part) is None


def _unfit(part: ImagePart) -> str | None:
    """Why no provider takes `part` whatever its type, or None: no bytes, or bytes of another image type."""
    if not part.data:
        return "empty"
    found = image_type(part.data)
    if found is not None and found != part.mime_type.lower():
        return f"its bytes are {found}"
    return None


def image_note(part: ImagePart, provider: str) -> str:
    """The text that stands in for an image `provider` cannot take."""
    return attachment_note(part.mime_type, len(part.data), provider)


def attachment_note(mime_type: str, size: int, provider: str) -> str:
    """`image_note` of an image known by its type and size only (a stored request's, still base64)."""
    return f"[an attachment ({mime_type}, {size:,} bytes) {provider} cannot take as an image: not carried over]"


def images_not_taken(
    conversation: Conversation | None, provider: str, accepted: frozenset[str] = TAKEN_IMAGE_TYPES
) -> str | None:
    """What the warning says of the images a user's turn of `conversation` holds that `provider` (taking the
    `accepted` types) cannot take, or None when there are none (the model's own images are told as text
    already, as any backend tells them)."""
    found = [
        f"turn {number}: {part.mime_type}" + (f" ({why})" if (why := _unfit(part)) else "")
        for number, turn in enumerate(conversation.turns if conversation is not None else [])
        if isinstance(turn, UserTurn)
        for part in turn.parts
        if isinstance(part, ImagePart) and not taken(part, accepted)
    ]
    if not found:
        return None
    return (
        f"the history holds {len(found)} image(s) {provider} does not take ({_ACCEPTED[accepted]}, not empty and "
        "of the type they say): "
        f"{_first_five(found)}; each is carried as a text note saying what it was"
    )


def stored_not_taken(found: list[str], what: str, provider: str) -> list[str]:
    """The warning of a stored session whose `found` attachments (`what`: "image(s)", "attachment(s)") `provider`
    does not take, each replaced by a text note in what is sent and kept; none when there are none."""
    if not found:
        return []
    return [
        f"the stored session holds {len(found)} {what} of a type {provider} does not take: {_first_five(found)}; "
        "each is sent (and kept) as a text note saying what it was"
    ]


def _first_five(found: list[str]) -> str:
    """`found` named in a warning: the first five, and how many more."""
    return ", ".join(found[:5]) + (f" and {len(found) - 5} more" if len(found) > 5 else "")
