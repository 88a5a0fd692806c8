"""Raw HTTP for the emulator tests (stdlib only, so nothing sits between test and server)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

KEY = {"x-api-key": "sk-test", "anthropic-version": "2023-06-01"}
BEARER = {"authorization": "Bearer sk-test"}


def post(url: str, body: Any, headers: dict | None = None, timeout: float = 30) -> tuple[int, dict, bytes]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method="POST",
                                 headers={"content-type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, {k.lower(): v for k, v in resp.headers.items()}, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, {k.lower(): v for k, v in e.headers.items()}, e.read()


def get(url: str, headers: dict | None = None) -> tuple[int, bytes]:
    req = urllib.request.Request(url, headers=headers or {})
    with urllib.request.urlopen(req, timeout=30) as resp:
        return resp.status, resp.read()


def parse_sse(raw: bytes) -> list[tuple[str | None, Any]]:
    events = []
    for chunk in raw.decode().split("\n\n"):
        if not chunk.strip():
            continue
        event, data = None, []
        for line in chunk.split("\n"):
            if line.startswith("event: "):
                event = line[7:]
            elif line.startswith("data: "):
                data.append(line[6:])
        text = "\n".join(data)
        events.append((event, text if text == "[DONE]" else json.loads(text)))
    return events


def msg_body(messages: list | None = None, **extra: Any) -> dict:
    body = {"model": "claude-sonnet-4-5", "max_tokens": 256,
            "messages": messages if messages is not None else [{"role": "user", "content": "hello"}]}
    body.update(extra)
    return body
