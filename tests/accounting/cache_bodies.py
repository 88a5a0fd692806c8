"""Messages bodies of exact sizes (under the emulator's rule) for the cache-model tests:
SPEC section 3's worked cases, built block by block."""

from __future__ import annotations

from scalpel_desktop.accounting.cache_model import PromptCache, request_blocks
from scalpel_desktop.accounting.tokens import rule_tokens
from scalpel_desktop.wire.usage import Usage
from scalpel_desktop.wire.jsoncodec import dumps

CC5 = {"type": "ephemeral"}
CC1H = {"type": "ephemeral", "ttl": "1h"}


def sized(template: dict, field: str, tokens: int, fill: str = "a") -> dict:
    """``template`` with ``field`` padded so the block is exactly ``tokens`` rule tokens."""
    block = dict(template)
    block[field] = ""
    base = len(dumps(block))
    block[field] = fill * (4 * tokens - base)
    assert rule_tokens(block) == tokens
    return block


def text(tokens: int, fill: str = "a", cc: dict | None = None) -> dict:
    block = sized({"type": "text", "text": ""}, "text", tokens, fill)
    if cc:
        block["cache_control"] = cc
    return block


def tool(name: str, tokens: int) -> dict:
    return sized({"name": name, "description": "", "input_schema": {"type": "object"}}, "description", tokens)


def tool_use(tid: str, tokens: int) -> dict:
    block = {"type": "tool_use", "id": tid, "name": "Read", "input": {"file_path": ""}}
    base = len(dumps(block))
    block["input"] = {"file_path": "p" * (4 * tokens - base)}
    assert rule_tokens(block) == tokens
    return block


RESULT_FRAME = rule_tokens({"type": "tool_result", "tool_use_id": "toolu_1", "content": ""})


def tool_result(tid: str, content_tokens: int, cc: dict | None = None) -> dict:
    """A tool_result whose content adds exactly ``content_tokens`` to its empty frame."""
    block = sized({"type": "tool_result", "tool_use_id": tid, "content": ""}, "content",
                  RESULT_FRAME + content_tokens, "r")
    if cc:
        block["cache_control"] = cc
    return block


def base_body(cc: dict = CC5, system_fill: str = "s") -> dict:
    """Tools 1,000 tokens, system 2,000 with a breakpoint on its last block."""
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": 100,
        "tools": [tool("a", 400), tool("b", 600)],
        "system": [text(1000, system_fill), text(1000, "t", cc)],
        "messages": [],
    }


def case1(cc: dict = CC5, system_fill: str = "s") -> dict:
    body = base_body(cc, system_fill)
    body["messages"] = [{"role": "user", "content": [text(500, "u", cc)]}]
    return body


def case2(cc: dict = CC5, system_fill: str = "s", result_tokens: int = 250) -> dict:
    """Case 1 plus 300 tokens in 2 blocks: a tool_use, and a result whose content is
    250 tokens (the block is those plus its empty frame; the two blocks sum to 300)."""
    body = case1(cc, system_fill)
    del body["messages"][0]["content"][0]["cache_control"]
    body["messages"] += [
        {"role": "assistant", "content": [tool_use("toolu_1", 50 - RESULT_FRAME)]},
        {"role": "user", "content": [tool_result("toolu_1", result_tokens, cc)]},
    ]
    return body


def case3(cc: dict = CC5, result_tokens: int = 250) -> dict:
    """Case 2 plus 100 more tokens; the breakpoint moves to the new last block."""
    body = case2(cc, result_tokens=result_tokens)
    last = body["messages"][-1]["content"]
    del last[0]["cache_control"]
    last.append(text(100, "n", cc))
    return body


def bill(cache: PromptCache, body: dict, now: float) -> Usage:
    return cache.bill(body["model"], request_blocks(body), now)


def U(input=0, w5=0, w1=0, read=0) -> Usage:  # noqa: N802 - short for the tables below
    return Usage(input_tokens=input, cache_write_5m=w5, cache_write_1h=w1, cache_read=read)
