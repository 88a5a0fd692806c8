"""No credential and no message content in any stored file; the ledger holds the emulator's bill.

The real proxy (``Runtime``) runs in front of the real emulated upstream. The
official anthropic SDK (plain and streaming) and openai SDK send requests
carrying a sentinel API key, a sentinel custom header and sentinel text in
the system prompt, messages and a tool result. Afterwards every file under
SCALPEL_HOME and HOME (the ledger, its -wal and -shm, the logs, spill, config,
state) is searched for both sentinels, while the proxy runs (WAL not yet
checkpointed) and after it stopped. The usage columns in the ledger must
equal, request for request, what the emulator billed.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import time
import uuid
from pathlib import Path

import anthropic
import openai
import pytest

from scalpel_desktop.config import Config
from scalpel_desktop.emulator.script import Script, call, say
from scalpel_desktop.emulator.testing import running_emulator
from scalpel_desktop.paths import dirs, ensure_private_dir
from scalpel_desktop.runtime import Runtime

TOKEN = uuid.uuid4().hex
SENTINEL_KEY = f"sk-ant-api03-SENTINELKEY{TOKEN}"
SENTINEL_OPENAI_KEY = f"sk-proj-SENTINELKEY{TOKEN}"
SENTINEL_TEXT = f"SENTINELTEXT{TOKEN[::-1]}"
MODEL = "claude-sonnet-4-6"


@pytest.fixture
def product_log():
    """The product's logs at DEBUG into a file under dirs().logs, as ``scalpel start`` writes them."""
    path = ensure_private_dir(dirs().logs) / "proxy-debug.log"
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setLevel(logging.DEBUG)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    loggers = [logging.getLogger(n) for n in ("scalpel", "aiohttp")]
    saved = [lg.level for lg in loggers]
    for lg in loggers:
        lg.addHandler(handler)
        lg.setLevel(logging.DEBUG)
    yield path
    for lg, lvl in zip(loggers, saved):
        lg.removeHandler(handler)
        lg.setLevel(lvl)
    handler.close()


def files_under(*roots: Path) -> list[Path]:
    out = []
    for root in roots:
        for dirpath, _dirs, names in os.walk(root):
            out.extend(Path(dirpath) / n for n in names)
    return out


def find_sentinels(paths: list[Path]) -> list[str]:
    needles = [s.encode() for s in (SENTINEL_KEY, SENTINEL_OPENAI_KEY, SENTINEL_TEXT, "SENTINELKEY", TOKEN, TOKEN[::-1])]
    hits = []
    for p in paths:
        try:
            data = p.read_bytes()
        except OSError:
            continue
        hits += [f"{p}: {n.decode()}" for n in needles if n in data]
    return hits


def ledger_rows(path: Path) -> list[sqlite3.Row]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    try:
        return conn.execute("SELECT * FROM requests ORDER BY id").fetchall()
    finally:
        conn.close()


def wait_for_rows(path: Path, n: int, timeout: float = 20.0) -> list[sqlite3.Row]:
    deadline = time.monotonic() + timeout
    rows: list = []
    while time.monotonic() < deadline:
        if path.exists():
            try:
                rows = ledger_rows(path)
            except sqlite3.Error:
                rows = []
            if len(rows) >= n:
                return rows
        time.sleep(0.05)
    return rows


def test_no_secret_or_content_in_any_stored_file_and_usage_lands(product_log):
    script = Script(main=[call("Read", f"Reading {SENTINEL_TEXT}.", file_path="/tmp/notes.txt"), say("Done."),
                          say("Still done.")])
    system = [{"type": "text", "text": f"You are careful. {SENTINEL_TEXT} " + "Rules of the house. " * 400,
               "cache_control": {"type": "ephemeral"}}]
    with running_emulator(script) as emu:
        rt = Runtime(Config.load(), {"anthropic_upstream": emu.url, "openai_upstream": emu.url}, port=0).start()
        try:
            url = f"http://127.0.0.1:{rt.port}"
            client = anthropic.Anthropic(base_url=url, api_key=SENTINEL_KEY, max_retries=0,
                                         default_headers={"x-sentinel-header": SENTINEL_KEY})
            messages = [{"role": "user", "content": f"Please read the notes. {SENTINEL_TEXT}"}]
            first = client.messages.create(model=MODEL, max_tokens=200, system=system, messages=messages)
            tool_use = next(b for b in first.content if b.type == "tool_use")
            messages += [
                {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool_use.id,
                                              "content": f"notes: {SENTINEL_TEXT} password={SENTINEL_KEY}",
                                              "cache_control": {"type": "ephemeral"}}]},
            ]
            with client.messages.stream(model=MODEL, max_tokens=200, system=system, messages=messages) as stream:
                "".join(stream.text_stream)
                second = stream.get_final_message()
            messages += [{"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in second.content]},
                         {"role": "user", "content": [{"type": "text", "text": f"Thanks {SENTINEL_TEXT}",
                                                       "cache_control": {"type": "ephemeral"}}]}]
            third = client.messages.create(model=MODEL, max_tokens=200, system=system, messages=messages)
            assert third.usage.cache_read_input_tokens > 0, "the emulator should have billed a cache read"
            client.messages.count_tokens(model=MODEL, system=system, messages=messages)

            oa = openai.OpenAI(base_url=url + "/openai/v1", api_key=SENTINEL_OPENAI_KEY, max_retries=0)
            oa.chat.completions.create(model="gpt-4.1", messages=[{"role": "user", "content": f"hi {SENTINEL_TEXT}"}])
            stream = oa.chat.completions.create(model="gpt-4.1", stream=True, stream_options={"include_usage": True},
                                                messages=[{"role": "user", "content": f"hi {SENTINEL_TEXT}"}])
            for _ in stream:
                pass

            api = emu.api_requests + [r for r in emu.received if r.endpoint == "count_tokens"]
            n = len(emu.received)
            assert len(api) == n == 6
            rows = wait_for_rows(dirs().database, n)
            assert len(rows) == n

            # While the proxy still runs: the WAL holds fresh pages.
            live_files = files_under(Path(os.environ["SCALPEL_HOME"]), Path(os.environ["HOME"]))
            assert any(p.name.endswith("-wal") for p in live_files)
            assert product_log in live_files and product_log.stat().st_size > 0
            assert find_sentinels(live_files) == []
        finally:
            rt.stop()

        received = list(emu.received)
    # After stopping: every file again.
    assert find_sentinels(files_under(Path(os.environ["SCALPEL_HOME"]), Path(os.environ["HOME"]))) == []

    rows = ledger_rows(dirs().database)
    by_order = sorted(received, key=lambda r: r.index)
    assert [(r["api"], r["endpoint"]) for r in rows] == [(b.api, b.endpoint) for b in by_order]
    for row, rec in zip(rows, by_order):
        assert row["status"] == rec.status == 200
        assert row["body_bytes"] == len(rec.body)
        if rec.endpoint == "count_tokens":
            continue
        u = rec.usage
        assert u is not None
        assert (row["input_tokens"], row["cache_write_5m"], row["cache_write_1h"], row["cache_read"],
                row["output_tokens"]) == (u.input_tokens, u.cache_write_5m, u.cache_write_1h, u.cache_read,
                                          u.output_tokens)
    anthropic_rows = [r for r in rows if r["api"] == "anthropic" and r["endpoint"] == "messages"]
    assert sum(r["cache_read"] for r in anthropic_rows) > 0 and sum(r["cache_write_5m"] for r in anthropic_rows) > 0
    assert all(r["model"] == MODEL and r["client"].startswith("Anthropic/Python") for r in anthropic_rows)
    assert all(r["session"] for r in rows)
