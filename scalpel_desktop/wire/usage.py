"""The provider's usage counts for one response: the ground truth of its cost."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any


@dataclass
class Usage:
    input_tokens: int = 0  # uncached input (after the last breakpoint)
    cache_write_5m: int = 0
    cache_write_1h: int = 0
    cache_read: int = 0
    output_tokens: int = 0

    @property
    def cache_write(self) -> int:
        return self.cache_write_5m + self.cache_write_1h

    @property
    def prompt_tokens(self) -> int:
        """Total prompt = input + cache creation + cache read."""
        return self.input_tokens + self.cache_write + self.cache_read

    def as_dict(self) -> dict[str, int]:
        return asdict(self)

    @classmethod
    def from_anthropic(cls, u: Mapping[str, Any] | None) -> Usage:
        """From an Anthropic ``usage`` object (message, message_start or message_delta)."""
        if not isinstance(u, Mapping):
            return cls()
        creation = _int(u.get("cache_creation_input_tokens"))
        split = u.get("cache_creation")
        w5 = w1 = 0
        if isinstance(split, Mapping):
            w5 = _int(split.get("ephemeral_5m_input_tokens"))
            w1 = _int(split.get("ephemeral_1h_input_tokens"))
        if w5 + w1 != creation:
            # No split given (or inconsistent): the total is what was billed; the 1h part
            # (at most the total) stands, the rest is called 5m.
            w1 = min(w1, creation)
            w5 = creation - w1
        return cls(
            input_tokens=_int(u.get("input_tokens")),
            cache_write_5m=w5,
            cache_write_1h=w1,
            cache_read=_int(u.get("cache_read_input_tokens")),
            output_tokens=_int(u.get("output_tokens")),
        )

    @classmethod
    def from_openai(cls, u: Mapping[str, Any] | None) -> Usage:
        """From OpenAI Chat (prompt_tokens) or Responses (input_tokens) usage."""
        if not isinstance(u, Mapping):
            return cls()
        prompt = _int(u.get("prompt_tokens", u.get("input_tokens")))
        details = u.get("prompt_tokens_details") or u.get("input_tokens_details") or {}
        cached = _int(details.get("cached_tokens")) if isinstance(details, Mapping) else 0
        out = _int(u.get("completion_tokens", u.get("output_tokens")))
        return cls(input_tokens=max(0, prompt - cached), cache_read=cached, output_tokens=out)


def _int(v: Any) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else 0
