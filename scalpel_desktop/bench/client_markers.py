"""Where a Claude Code version puts its cache markers, so a replayed body carries what the client sent.

The surgery stage counts the markers of the body it is given to know whether
the free 4th marker (the pin of a warm cut, ``surgery/pin.py``) can be placed.
A bench body with fewer markers than the client really sends lets the stage
pin where it never could live; a body with the client's markers makes it see
what it would see on the wire. So every replayed body is built with its
recording version's layout, read off real request bodies
(``../shared/corpus/wire``):

* **2.1 and newer** (the 2.1.332 capture): 3 markers. The system prompt is a
  billing-header block (no marker), the static part (marker) and the rest
  (marker); then the last block of the last message. One marker is free.
* **before 2.1** (the 2.0.77 capture, and SPEC 4's "older versions: the last
  two messages"): 4 markers. Two system blocks (both marked), the last block
  of the message before the last one, and the last block of the last message.
  No marker is free: no pin, and a warm cut is priced at its worst case.

A version that does not parse is taken as the newest layout (3 markers): the
one the shipped client sends, and the one that leaves the stage the most room,
so an unknown version is never billed a pin it could not have had without the
bench saying which layout it used (``layout_for(...).name``).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class MarkerLayout:
    name: str  # "2.1+" | "pre-2.1"
    system_blocks: tuple[bool, ...]  # per system block: does it carry a marker?
    previous_message: bool  # a marker on the last block of the message before the last one

    @property
    def markers(self) -> int:
        return sum(self.system_blocks) + 1 + int(self.previous_message)


NEW = MarkerLayout("2.1+", (False, True, True), previous_message=False)
OLD = MarkerLayout("pre-2.1", (True, True), previous_message=True)


def version_tuple(version: str) -> tuple[int, int] | None:
    """(major, minor) of a Claude Code version string; None when it does not parse."""
    try:
        parts = tuple(int(x) for x in str(version).split(".")[:2])
    except ValueError:
        return None
    return parts if len(parts) == 2 else None  # type: ignore[return-value]


def layout_for(version: str) -> MarkerLayout:
    """The marker layout the Claude Code ``version`` sends (see the module docstring)."""
    v = version_tuple(version)
    return OLD if v is not None and v < (2, 1) else NEW


# Blocks the API lets carry cache_control (a thinking block is sent back as it came).
_MARKABLE = ("text", "tool_result", "tool_use", "image", "document")


def mark_last_block(message: dict, marker: dict) -> dict:
    """A copy of ``message`` whose last block carries ``marker`` (the message itself when its
    last block cannot carry one)."""
    content = message.get("content")
    if not isinstance(content, list) or not content:
        return message
    last = content[-1]
    if not isinstance(last, dict) or last.get("type") not in _MARKABLE:
        return message
    content = list(content)
    content[-1] = dict(last, cache_control=marker)
    return dict(message, content=content)


def system_blocks(layout: MarkerLayout, marker: dict) -> list[dict]:
    """The stand-in system prompt of a replayed body, marked as ``layout`` marks it (the
    transcript holds no system prompt: its size comes from the usage, ``bench/simulate.py``)."""
    names = ("billing header", "static system prompt", "system prompt")[-len(layout.system_blocks):]
    out = []
    for name, marked in zip(names, layout.system_blocks):
        block: dict = {"type": "text", "text": f"({name}: not in the transcript)"}
        if marked:
            block["cache_control"] = dict(marker)
        out.append(block)
    return out
