"""Answer bodies and event streams for the three APIs, built from a ``Turn``.

Pure: the server decides *when* to write; this module decides *what*. Ids
carry a random per-process part (``RUN``) plus a counter, so ids never repeat
across emulator restarts (``claude --resume`` would be confused otherwise).
"""

from __future__ import annotations

import itertools
import json
import secrets
import threading
import time
from collections.abc import Iterator, Mapping
from typing import Any

from scalpel_desktop.accounting.tokens import rule_tokens
from scalpel_desktop.wire.usage import Usage
from scalpel_desktop.emulator.script import Turn

RUN = secrets.token_hex(6)
_counter = itertools.count(1)
_lock = threading.Lock()
SIGNATURE = "c2NhbHBlbC1lbXVsYXRvci1zaWduYXR1cmU="  # base64("scalpel-emulator-signature")


def new_id(prefix: str) -> str:
    with _lock:
        n = next(_counter)
    return f"{prefix}{RUN}{n:06d}"


def _chunks(text: str, size: int = 24) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)] or [""]


# --------------------------------------------------------------------------- Anthropic


def thinking_wanted(body: Mapping[str, Any]) -> str | None:
    """The thinking text to send back, or None when the request has thinking off."""
    th = body.get("thinking")
    if not isinstance(th, Mapping) or th.get("type") not in ("enabled", "adaptive"):
        return None
    return "" if th.get("display") == "omitted" else "Considering the next step."


def anthropic_content(turn: Turn, body: Mapping[str, Any]) -> list[dict]:
    content: list[dict] = []
    thinking = thinking_wanted(body)
    if thinking is not None:
        text = turn.thinking if turn.thinking is not None else thinking
        content.append({"type": "thinking", "thinking": text, "signature": SIGNATURE})
    if turn.text:
        content.append({"type": "text", "text": turn.text})
    for c in turn.tool_calls:
        content.append({"type": "tool_use", "id": new_id("toolu_"), "name": c.name, "input": dict(c.input)})
    return content


def output_tokens(content: list[dict]) -> int:
    return max(1, sum(rule_tokens(b) for b in content))


def anthropic_usage(usage: Usage, out: int | None = None) -> dict:
    d = {
        "input_tokens": usage.input_tokens,
        "cache_creation_input_tokens": usage.cache_write,
        "cache_read_input_tokens": usage.cache_read,
        "cache_creation": {
            "ephemeral_5m_input_tokens": usage.cache_write_5m,
            "ephemeral_1h_input_tokens": usage.cache_write_1h,
        },
        "output_tokens": usage.output_tokens if out is None else out,
        "service_tier": "standard",
    }
    return d


def anthropic_message(turn: Turn, body: Mapping[str, Any], usage: Usage, content: list[dict]) -> dict:
    return {
        "id": new_id("msg_"),
        "type": "message",
        "role": "assistant",
        "model": body.get("model"),
        "content": content,
        "stop_reason": turn.stop_reason,
        "stop_sequence": None,
        "usage": anthropic_usage(usage),
    }


def anthropic_events(message: dict) -> Iterator[tuple[str, dict]]:
    """The exact SSE sequence: message_start, per block start/deltas/stop (a ping
    after the first block starts), message_delta with the final usage, message_stop."""
    start = dict(message, content=[], stop_reason=None)
    start["usage"] = dict(message["usage"], output_tokens=1)
    yield "message_start", {"type": "message_start", "message": start}
    for index, block in enumerate(message["content"]):
        for n, event in enumerate(_block_events(index, block)):
            yield event
            if n == 0 and index == 0:
                yield "ping", {"type": "ping"}
    u = message["usage"]
    yield "message_delta", {"type": "message_delta",
                            "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                            "usage": {k: u[k] for k in ("input_tokens", "cache_creation_input_tokens",
                                                        "cache_read_input_tokens", "output_tokens")}}
    yield "message_stop", {"type": "message_stop"}


def _block_events(index: int, block: dict) -> Iterator[tuple[str, dict]]:
    t = block["type"]
    if t == "thinking":
        yield "content_block_start", {"type": "content_block_start", "index": index,
                                      "content_block": {"type": "thinking", "thinking": "", "signature": ""}}
        for piece in (_chunks(block["thinking"]) if block["thinking"] else []):
            yield "content_block_delta", {"type": "content_block_delta", "index": index,
                                          "delta": {"type": "thinking_delta", "thinking": piece}}
        yield "content_block_delta", {"type": "content_block_delta", "index": index,
                                      "delta": {"type": "signature_delta", "signature": block["signature"]}}
    elif t == "text":
        yield "content_block_start", {"type": "content_block_start", "index": index,
                                      "content_block": {"type": "text", "text": ""}}
        for piece in _chunks(block["text"]):
            yield "content_block_delta", {"type": "content_block_delta", "index": index,
                                          "delta": {"type": "text_delta", "text": piece}}
    elif t == "tool_use":
        yield "content_block_start", {"type": "content_block_start", "index": index,
                                      "content_block": {"type": "tool_use", "id": block["id"],
                                                        "name": block["name"], "input": {}}}
        yield "content_block_delta", {"type": "content_block_delta", "index": index,
                                      "delta": {"type": "input_json_delta", "partial_json": ""}}
        for piece in _chunks(json.dumps(block["input"], ensure_ascii=False, separators=(",", ":")), 32):
            yield "content_block_delta", {"type": "content_block_delta", "index": index,
                                          "delta": {"type": "input_json_delta", "partial_json": piece}}
    yield "content_block_stop", {"type": "content_block_stop", "index": index}


def sse(event: str | None, data: Any) -> bytes:
    payload = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n".encode()


# --------------------------------------------------------------------------- OpenAI


def _openai_calls(turn: Turn) -> list[dict]:
    return [{"id": new_id("call_"), "name": c.name,
             "arguments": json.dumps(dict(c.input), ensure_ascii=False, separators=(",", ":"))}
            for c in turn.tool_calls]


def openai_out_tokens(turn: Turn) -> int:
    return max(1, rule_tokens(turn.text or "") + sum(rule_tokens(dict(c.input)) for c in turn.tool_calls))


def chat_usage(usage: Usage, out: int) -> dict:
    prompt = usage.prompt_tokens
    return {"prompt_tokens": prompt, "completion_tokens": out, "total_tokens": prompt + out,
            "prompt_tokens_details": {"cached_tokens": usage.cache_read, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
                                          "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}}


def chat_completion(turn: Turn, body: Mapping[str, Any], usage: Usage) -> dict:
    calls = _openai_calls(turn)
    message: dict[str, Any] = {"role": "assistant", "content": turn.text if turn.text or not calls else None,
                               "refusal": None}
    if calls:
        message["tool_calls"] = [{"id": c["id"], "type": "function",
                                  "function": {"name": c["name"], "arguments": c["arguments"]}} for c in calls]
    return {"id": new_id("chatcmpl-"), "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model"), "system_fingerprint": "fp_scalpel",
            "choices": [{"index": 0, "message": message, "logprobs": None,
                         "finish_reason": "tool_calls" if calls else "stop"}],
            "usage": chat_usage(usage, openai_out_tokens(turn))}


def chat_chunks(completion: dict, include_usage: bool) -> Iterator[dict]:
    base = {"id": completion["id"], "object": "chat.completion.chunk", "created": completion["created"],
            "model": completion["model"], "system_fingerprint": "fp_scalpel"}
    choice = completion["choices"][0]
    msg = choice["message"]

    def chunk(delta: dict, finish: str | None = None) -> dict:
        return dict(base, choices=[{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}])

    yield chunk({"role": "assistant", "content": "", "refusal": None})
    if msg.get("content"):
        for piece in _chunks(msg["content"]):
            yield chunk({"content": piece})
    for k, c in enumerate(msg.get("tool_calls") or []):
        yield chunk({"tool_calls": [{"index": k, "id": c["id"], "type": "function",
                                     "function": {"name": c["function"]["name"], "arguments": ""}}]})
        for piece in _chunks(c["function"]["arguments"], 32):
            yield chunk({"tool_calls": [{"index": k, "function": {"arguments": piece}}]})
    yield chunk({}, choice["finish_reason"])
    if include_usage:
        yield dict(base, choices=[], usage=completion["usage"])


def responses_usage(usage: Usage, out: int) -> dict:
    prompt = usage.prompt_tokens
    return {"input_tokens": prompt, "input_tokens_details": {"cached_tokens": usage.cache_read},
            "output_tokens": out, "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": prompt + out}


def response_object(turn: Turn, body: Mapping[str, Any], usage: Usage) -> dict:
    output: list[dict] = []
    if turn.text:
        output.append({"type": "message", "id": new_id("msg_"), "status": "completed", "role": "assistant",
                       "content": [{"type": "output_text", "text": turn.text, "annotations": []}]})
    for c in _openai_calls(turn):
        output.append({"type": "function_call", "id": new_id("fc_"), "call_id": c["id"], "name": c["name"],
                       "arguments": c["arguments"], "status": "completed"})
    return {"id": new_id("resp_"), "object": "response", "created_at": int(time.time()), "status": "completed",
            "error": None, "incomplete_details": None, "instructions": body.get("instructions"),
            "max_output_tokens": body.get("max_output_tokens"), "model": body.get("model"), "output": output,
            "parallel_tool_calls": True, "previous_response_id": body.get("previous_response_id"),
            "reasoning": {"effort": None, "summary": None}, "store": bool(body.get("store", True)),
            "temperature": 1.0, "text": {"format": {"type": "text"}}, "tool_choice": body.get("tool_choice", "auto"),
            "tools": body.get("tools") or [], "top_p": 1.0, "truncation": "disabled",
            "usage": responses_usage(usage, openai_out_tokens(turn)), "user": None, "metadata": {}}


def response_events(resp: dict) -> Iterator[dict]:
    """The Responses stream: created, in_progress, per item added/deltas/done, completed."""
    seq = itertools.count()
    pending = dict(resp, status="in_progress", output=[], usage=None)
    yield {"type": "response.created", "sequence_number": next(seq), "response": pending}
    yield {"type": "response.in_progress", "sequence_number": next(seq), "response": pending}
    for oi, item in enumerate(resp["output"]):
        if item["type"] == "message":
            yield {"type": "response.output_item.added", "sequence_number": next(seq), "output_index": oi,
                   "item": dict(item, status="in_progress", content=[])}
            part = item["content"][0]
            yield {"type": "response.content_part.added", "sequence_number": next(seq), "item_id": item["id"],
                   "output_index": oi, "content_index": 0,
                   "part": {"type": "output_text", "text": "", "annotations": []}}
            for piece in _chunks(part["text"]):
                yield {"type": "response.output_text.delta", "sequence_number": next(seq), "item_id": item["id"],
                       "output_index": oi, "content_index": 0, "delta": piece, "logprobs": []}
            yield {"type": "response.output_text.done", "sequence_number": next(seq), "item_id": item["id"],
                   "output_index": oi, "content_index": 0, "text": part["text"], "logprobs": []}
            yield {"type": "response.content_part.done", "sequence_number": next(seq), "item_id": item["id"],
                   "output_index": oi, "content_index": 0, "part": part}
        else:
            yield {"type": "response.output_item.added", "sequence_number": next(seq), "output_index": oi,
                   "item": dict(item, status="in_progress", arguments="")}
            for piece in _chunks(item["arguments"], 32):
                yield {"type": "response.function_call_arguments.delta", "sequence_number": next(seq),
                       "item_id": item["id"], "output_index": oi, "delta": piece}
            yield {"type": "response.function_call_arguments.done", "sequence_number": next(seq),
                   "item_id": item["id"], "output_index": oi, "arguments": item["arguments"]}
        yield {"type": "response.output_item.done", "sequence_number": next(seq), "output_index": oi, "item": item}
    yield {"type": "response.completed", "sequence_number": next(seq), "response": resp}
