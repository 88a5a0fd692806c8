"""Token counting: the emulator's exact rule, and a first estimator.

Two different things live here and must never be confused:

* ``rule_tokens`` is the emulated upstream's *billing* rule (SPEC section 3):
  a block costs ceil(UTF-8 bytes of its compact JSON / 4) tokens, its
  ``cache_control`` marker excluded. It is exact by definition, so every
  billing test can be computed by hand.
* ``estimate_tokens`` predicts what the real provider will count. It is
  calibrated against real usage counts (see ``accounting/estimator.py`` when
  present); the default here is a plain characters / 3.3.
"""

from __future__ import annotations

import math
from typing import Any

from scalpel_desktop.wire.jsoncodec import dumps

CHARS_PER_TOKEN_DEFAULT = 3.3


def canonical_block(block: Any) -> Any:
    """The block as the cache sees it: without its ``cache_control`` marker."""
    if isinstance(block, dict) and "cache_control" in block:
        return {k: v for k, v in block.items() if k != "cache_control"}
    return block


def rule_tokens(block: Any) -> int:
    """The emulator's token count for one block: ceil(len(compact JSON bytes) / 4)."""
    return math.ceil(len(dumps(canonical_block(block))) / 4)


def estimate_tokens_bytes(n: int) -> int:
    """Estimated tokens of a JSON body of ``n`` bytes (structure included)."""
    return 0 if n <= 0 else max(1, round(n / CHARS_PER_TOKEN_DEFAULT))


def estimate_tokens(text: str) -> int:
    """A plain estimate of real tokens for ``text`` (characters / 3.3)."""
    if not text:
        return 0
    return max(1, round(len(text) / CHARS_PER_TOKEN_DEFAULT))
