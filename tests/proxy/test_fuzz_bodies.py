"""Fuzzed request bodies through the real proxy (the runtime, the pipeline that ships)
to an upstream that records the bytes it receives.

Seeds: the real Claude Code bodies of ../shared/corpus/wire (``json.dumps(body,
separators=(",", ":"), ensure_ascii=False)`` gives their bytes back) and generated
Claude Code shaped sessions (tests/invariants/agent_sessions), then mutated:
truncated and invalid JSON, invalid UTF-8, deep nesting, huge numbers, wrong types
in messages / content / tool_result, duplicate keys, empty bodies, sent plain, gzip
encoded (Content-Encoding) or chunked.

Invariants: every request gets the upstream's answer (no crash, no hang, no
error logged by the pipeline), the proxy still answers afterwards, and a body the
proxy cannot fully understand (not strict UTF-8 JSON with unique keys, or
encoded) reaches the upstream byte-identical. Bounded: a fixed number of
examples, no deadline, derandomized under CI (``CI`` set) so a failure replays.
"""

from __future__ import annotations

import gzip
import http.client
import json
import logging
import os
import random
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from scalpel_desktop.config import Config
from scalpel_desktop.runtime import Runtime
from tests.proxy.recording_upstream import RecordingUpstream

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus" / "wire"
MAX_EXAMPLES = int(os.environ.get("SCALPEL_FUZZ_EXAMPLES", "300"))
PATHS = ("/v1/messages?beta=true", "/v1/messages", "/v1/messages/count_tokens",
         "/openai/v1/chat/completions", "/openai/v1/responses")


def compact(obj) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _seeds() -> list[bytes]:
    out: list[bytes] = []
    for f in sorted(CORPUS.glob("*/requests.jsonl")):
        for line in f.read_text(encoding="utf-8").splitlines():
            if line.strip():
                out.append(compact(json.loads(line)["body"]))
    from tests.invariants.agent_sessions import generate

    session = generate(random.Random(11), main_turns=30)
    out.extend(compact(r.body) for r in session.requests[::6])
    return out


SEEDS = _seeds()
SEEN: Counter = Counter()  # mutation kinds drawn, and how the requests went


def understood(body: bytes) -> bool:
    """Strict UTF-8, strict JSON (no NaN, no duplicate key), an object at the top."""
    def no_dups(pairs):
        keys = [k for k, _ in pairs]
        if len(keys) != len(set(keys)):
            raise ValueError("duplicate key")
        return dict(pairs)

    def no_constants(name):
        raise ValueError(name)

    try:
        doc = json.loads(body.decode("utf-8"), object_pairs_hook=no_dups, parse_constant=no_constants)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return False
    return isinstance(doc, dict)


# -- mutations ----------------------------------------------------------------------------

WRONG = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=False),
                  st.text(max_size=20), st.lists(st.integers(), max_size=3),
                  st.dictionaries(st.text(max_size=5), st.integers(), max_size=3))


def _slots(doc: dict) -> list[tuple[object, object]]:
    """(container, key) places where a wrong type hurts: messages, a message, its role and
    content, a content block, a tool_result's content and id, tools, system."""
    out: list[tuple[object, object]] = [(doc, "messages"), (doc, "tools"), (doc, "system"), (doc, "model"),
                                        (doc, "max_tokens")]
    for i, m in enumerate(doc.get("messages") or []):
        out.append((doc["messages"], i))
        if isinstance(m, dict):
            out += [(m, "role"), (m, "content")]
            if isinstance(m.get("content"), list):
                for j, block in enumerate(m["content"]):
                    out.append((m["content"], j))
                    if isinstance(block, dict) and block.get("type") in ("tool_result", "tool_use"):
                        out += [(block, "content"), (block, "tool_use_id"), (block, "id"), (block, "type"),
                                (block, "is_error"), (block, "input")]
    return out


@st.composite
def bodies(draw) -> bytes:
    seed = draw(st.sampled_from(SEEDS))
    kind = draw(st.sampled_from(["seed", "truncate", "byte", "utf8", "deep", "number", "types", "types",
                                 "dupkey", "empty", "generated"]))
    event(kind)
    SEEN[kind] += 1
    if kind == "seed":
        return seed
    if kind == "truncate":
        return seed[: draw(st.integers(0, len(seed) - 1))]
    if kind == "byte":
        i = draw(st.integers(0, len(seed) - 1))
        return seed[:i] + bytes([draw(st.integers(0, 255))]) + seed[i + draw(st.integers(0, 2)):]
    if kind == "utf8":
        bad = draw(st.sampled_from([b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe2\x82", b"\x80"]))
        spots = [i + 1 for i in range(len(seed)) if seed[i : i + 1] == b'"'] or [0]
        i = draw(st.sampled_from(spots[: 400]))
        return seed[:i] + bad + seed[i:]
    if kind == "deep":
        depth = draw(st.sampled_from([64, 255, 500, 1025, 5000, 100_000]))
        opener, closer = draw(st.sampled_from([(b"[", b"]"), (b'{"a":', b"}")]))
        inner = opener * depth + b"1" + closer * depth
        doc = json.loads(seed)
        doc.setdefault("messages", []).append({"role": "user", "content": "PLACEHOLDER"})
        return compact(doc).replace(b'"PLACEHOLDER"', inner, 1)
    if kind == "number":
        big = draw(st.sampled_from([b"1" + b"0" * 30, b"9" * 5000, b"-" + b"9" * 400, b"1e400", b"-1e400",
                                    b"1.5e308", b"0.0000000000000000000000000001", b"-0", b"18446744073709551616"]))
        doc = json.loads(seed)
        where = draw(st.sampled_from(["max_tokens", "content", "tool_result"]))
        if where == "max_tokens":
            doc["max_tokens"] = "PLACEHOLDER"
        else:
            doc.setdefault("messages", []).append({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_x", "content": "PLACEHOLDER"}]
                if where == "tool_result" else "PLACEHOLDER"})
        return compact(doc).replace(b'"PLACEHOLDER"', big, 1)
    if kind == "types":
        doc = json.loads(seed)
        container, key = draw(st.sampled_from(_slots(doc)))
        container[key] = draw(WRONG)
        return compact(doc)
    if kind == "dupkey":
        doc = json.loads(seed)
        key = draw(st.sampled_from(["messages", "model", "stream", "tools", "system"]))
        value = compact(draw(st.one_of(WRONG, st.just(doc.get(key)))))
        pair = b'"' + key.encode() + b'":' + value
        if draw(st.booleans()):
            return b"{" + pair + b"," + seed[1:]  # first one wins for some parsers, last for others
        return seed[:-1] + b"," + pair + b"}"
    if kind == "empty":
        return draw(st.sampled_from([b"", b"{}", b"[]", b"null", b" ", b'""', b"{", b"\x00"]))
    # generated: Anthropic-ish documents from scratch
    leaf = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=30))
    value = st.recursive(leaf, lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=8), c, max_size=4),
                         max_leaves=20)
    block = st.fixed_dictionaries({"type": st.sampled_from(["text", "tool_use", "tool_result", "image", "thinking"])},
                                  optional={"text": value, "id": value, "tool_use_id": value, "content": value,
                                            "input": value, "name": value, "cache_control": value})
    msg = st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant", "system", 7])},
                                optional={"content": st.one_of(value, st.lists(block, max_size=4))})
    doc = draw(st.fixed_dictionaries({"messages": st.lists(msg, max_size=6)},
                                     optional={"model": value, "stream": value, "tools": value, "system": value,
                                               "metadata": value, "max_tokens": value}))
    return compact(doc)


@dataclass
class Case:
    body: bytes
    path: str
    gzip: bool
    chunked: bool
    content_type: str | None

    def __repr__(self) -> str:  # the body itself can be megabytes: its size, hash and ends
        import hashlib

        return (f"Case({len(self.body)} B sha256={hashlib.sha256(self.body).hexdigest()[:16]} "
                f"head={self.body[:80]!r} tail={self.body[-80:]!r}, {self.path}, gzip={self.gzip}, "
                f"chunked={self.chunked}, content_type={self.content_type!r})")


@st.composite
def cases(draw) -> Case:  # composite, not builds: a failure prints Case's short repr, not megabytes
    gz = draw(st.integers(0, 3)) == 0  # a quarter gzip: the pipeline never sees those
    return Case(draw(bodies()), draw(st.sampled_from(PATHS)), gz, draw(st.booleans()),
                draw(st.sampled_from(["application/json", None, "text/plain", "application/json; charset=utf-8"])))


def _send(conn: http.client.HTTPConnection, case: Case) -> tuple[int, bytes]:
    payload = gzip.compress(case.body, mtime=0) if case.gzip else case.body
    headers = {"x-api-key": "sk-ant-fuzz", "anthropic-version": "2023-06-01"}
    if case.content_type:
        headers["content-type"] = case.content_type
    if case.gzip:
        headers["content-encoding"] = "gzip"
    if case.chunked:
        parts = [payload[i : i + 7919] for i in range(0, len(payload), 7919)]
        conn.request("POST", case.path, body=iter(parts), headers=headers, encode_chunked=True)
    else:
        conn.request("POST", case.path, body=payload, headers=headers)
    resp = conn.getresponse()
    return resp.status, resp.read()


class _Errors(logging.Handler):
    def __init__(self):
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.mark.skipif(not SEEDS, reason="no seed bodies")
def test_fuzzed_bodies_never_break_the_proxy_and_reach_the_upstream_intact():
    errors = _Errors()
    logging.getLogger("scalpel").addHandler(errors)
    with RecordingUpstream() as up:
        rt = Runtime(Config.load(), {"anthropic_upstream": up.url, "openai_upstream": up.url}, port=0).start()
        conn = http.client.HTTPConnection("127.0.0.1", rt.port, timeout=60)
        changed: list[Case] = []
        try:
            @settings(max_examples=MAX_EXAMPLES, deadline=None, derandomize=bool(os.environ.get("CI")),
                      suppress_health_check=list(HealthCheck), database=None, print_blob=True)
            @given(case=cases())
            def check(case: Case) -> None:
                before = len(up.received)
                errors.records.clear()
                try:
                    status, answer = _send(conn, case)
                except (http.client.HTTPException, OSError):
                    conn.close()  # a fresh connection for the next example; this one failed
                    raise
                assert status == 200, (status, answer[:300])
                assert len(up.received) == before + 1
                got = up.received[-1]
                sent = gzip.compress(case.body, mtime=0) if case.gzip else case.body
                if case.gzip or not understood(case.body):
                    assert got.body == sent, "a body the proxy cannot understand was changed"
                elif got.body != sent:
                    assert understood(got.body), "the proxy sent a body it broke"
                    changed.append(case)
                SEEN["understood" if understood(case.body) and not case.gzip else "not understood"] += 1
                SEEN["gzip" if case.gzip else "plain"] += 1
                SEEN["chunked" if case.chunked else "length"] += 1
                assert not errors.records, [r.getMessage() for r in errors.records]

            check()
            # still answering, on a fresh connection too
            for c in (conn, http.client.HTTPConnection("127.0.0.1", rt.port, timeout=60)):
                status, _ = _send(c, Case(SEEDS[0], PATHS[0], False, False, "application/json"))
                assert status == 200
                c.close()
        finally:
            conn.close()
            rt.stop()
            logging.getLogger("scalpel").removeHandler(errors)
    assert not changed or all(understood(c.body) for c in changed)
    print(dict(SEEN), f"{len(changed)} understood bodies changed")
    wanted = {"seed", "truncate", "byte", "utf8", "deep", "number", "types", "dupkey", "empty", "generated",
              "understood", "not understood", "gzip", "chunked"}
    assert wanted <= set(SEEN), wanted - set(SEEN)
