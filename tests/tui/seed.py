"""A realistic ledger for the dashboard tests, written through the real writers.

Requests over 35 days (so the 30-day window has something to leave out),
several sessions and models, sub-agents, count_tokens calls, errors, and
only the decisions a real run records (new cuts, their replays on every later
request, a tool filter on every request of a session that started with it,
combined as ``cut+replayed+filtered``), with realized savings and their
provenance; the surgery log with spill files
(one of them gone); a tool inventory with calls, a removal list and filter
savings; cache misses of every kind on some main-agent requests, some with
the provider's own reason. Deterministic (a seeded RNG, a frozen ``NOW``), and returns every
row it wrote so tests compute expected figures on their own.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from scalpel_desktop.decisions import changes_of, is_change, label
from scalpel_desktop.paths import dirs
from scalpel_desktop.store.db import connect
from scalpel_desktop.store.ledger import LedgerWriter
from scalpel_desktop.store.spill import SpillStore
from scalpel_desktop.store.cutlog import CutLog, CutRecord
from scalpel_desktop.tools.store import Declared, ToolStore

# 2026-11-20 15:00:00 UTC, a Friday afternoon. Tests run with TZ=UTC.
NOW = datetime(2026, 11, 20, 15, 0, 0, tzinfo=timezone.utc).timestamp()
DAY = 86400.0

MODELS = ("claude-sonnet-4-5-20250929", "claude-opus-4-1-20250805", "claude-haiku-4-5-20251001")
BUILTINS = ("Read", "Edit", "Bash", "Grep", "Glob", "Write", "TodoWrite", "WebFetch", "NotebookEdit")
BUILTIN_TOKENS = {"Read": 610, "Edit": 420, "Bash": 1850, "Grep": 730, "Glob": 260, "Write": 330,
                  "TodoWrite": 2300, "WebFetch": 390, "NotebookEdit": 480}
MCP = {"github": ("create_issue", "list_pull_requests", "get_file_contents"),
       "playwright": ("browser_click", "browser_navigate", "browser_snapshot"),
       "linear": ("create_issue", "search_issues")}
CALLED = ("Read", "Edit", "Bash", "Grep", "Glob", "mcp__github__get_file_contents")
KINDS = ("superseded_read", "duplicate", "failed", "dead_snapshot", "stale_large")
PROJECTS = ("~/work/scalpel-desktop", "~/work/website", "~/src/infra-terraform", "/srv/data-pipeline")
TITLES = ("Fix the tray menu on GNOME", "Dashboard: cost per day view", "Terraform state cleanup")
FILES = ("~/work/scalpel-desktop/src/app.py", "~/work/scalpel-desktop/README.md", "/etc/hosts")


@dataclass
class Seed:
    now: float
    requests: list[dict[str, Any]] = field(default_factory=list)
    cuts: list[CutRecord] = field(default_factory=list)
    spilled: set[str] = field(default_factory=set)  # sha256 of the cuts whose spill file exists
    sessions: dict[str, dict[str, Any]] = field(default_factory=dict)  # session -> {model, start, ...}
    removals: tuple[str, ...] = ()
    filter_savings: list[tuple] = field(default_factory=list)


def _session_id(rng: random.Random) -> str:
    return "%08x-%04x-4%03x-a%03x-%012x" % (rng.getrandbits(32), rng.getrandbits(16), rng.getrandbits(12),
                                            rng.getrandbits(12), rng.getrandbits(48))


def _declared() -> list[Declared]:
    out = [Declared(n, "builtin", None, BUILTIN_TOKENS[n], f"The {n} tool.") for n in BUILTINS]
    for server, tools in MCP.items():
        for t in tools:
            out.append(Declared(f"mcp__{server}__{t}", "mcp", server, 300 + 40 * len(t), f"{t} via {server}."))
    return out


def seed_ledger(now: float = NOW, *, rng_seed: int = 7) -> Seed:
    rng = random.Random(rng_seed)
    seed = Seed(now)
    # (start offset back from now in seconds, main-agent turns): three live sessions, then older ones.
    plan = [(50 * 60, 40), (12 * 60, 9), (3 * 3600, 25), (6 * 3600, 30), (20 * 3600, 18)]
    plan += [(d * DAY + rng.uniform(0, 8) * 3600, rng.randint(8, 30)) for d in (1, 2, 3, 5, 6, 8, 11, 15, 19, 24, 29)]
    plan += [(33 * DAY, 12)]  # outside the 30-day window
    for i, (back, turns) in enumerate(plan):
        session = _session_id(rng)
        # Sonnet for most sessions: no tie in "the sessions' most common model" (which
        # tools/suggest.py prices suggestions with; a tie would resolve by set order).
        model = MODELS[0] if i % 2 == 0 else MODELS[1 + (i // 2) % 2]
        start = now - back
        project = PROJECTS[i % len(PROJECTS)] if i != 4 else None  # one session never stated its directory
        seed.sessions[session] = {"model": model, "start": start, "turns": turns, "project": project}
        if i < len(TITLES):
            seed.sessions[session]["title"] = TITLES[i]
        _session_requests(seed, rng, session, model, start, turns, last_gap={0: 40.0, 1: 95.0}.get(i),
                          filtered=i % 3 == 1)
    for row in seed.requests:  # what a real run records: changed exactly when the bytes differ
        assert (row["body_bytes"] != row["sent_bytes"]) == is_change(row["decision"]), row
    _misses(seed, random.Random(rng_seed + 1))  # its own RNG: the rows above stay as they were
    writer = LedgerWriter(dirs().database)
    for row in seed.requests:
        assert writer.submit(row)
    assert writer.flush(30)
    writer.close()
    _surgery_log(seed, rng)
    _inventory(seed, rng)
    _transcripts(seed)
    return seed


def _transcripts(seed: Seed) -> None:
    """Claude Code's own transcript files, with its summary line, for the titled sessions."""
    import json
    import os
    from pathlib import Path

    root = Path(os.environ["CLAUDE_CONFIG_DIR"]) / "projects"
    for session, info in seed.sessions.items():
        if "title" not in info:
            continue
        d = root / ("-" + (info["project"] or "x").strip("~/").replace("/", "-"))
        d.mkdir(parents=True, exist_ok=True)
        lines = [{"type": "summary", "summary": "an older title", "leafUuid": "x"},
                 {"type": "summary", "summary": info["title"], "leafUuid": "y"},
                 {"type": "user", "sessionId": session, "message": {"role": "user", "content": "hi"}}]
        (d / f"{session}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")


def _session_requests(seed: Seed, rng: random.Random, session: str, model: str, start: float, turns: int,
                      last_gap: float | None, filtered: bool = False) -> None:
    """One session's rows, with only the decisions a real run records (``decisions.py``):
    a new cut every 7th turn, its stubs replayed on every later turn, and in a session
    started with the tool filter on, every main-agent request filtered. Bytes sent differ
    from bytes received exactly on the changed rows."""
    ts = start
    prompt = rng.randint(14_000, 22_000)
    stubbed = 0  # tokens the session's earlier cuts keep out (replayed on every later request)
    filter_tokens = rng.randint(800, 2500) if filtered else 0
    if last_gap is not None:  # the live session's last request is ``last_gap`` seconds before now
        step = (seed.now - last_gap - start) / max(1, turns - 1)
    for t in range(turns):
        ts = start + t * step if last_gap is not None else ts + rng.uniform(20, 120)
        grow = rng.randint(600, 5200)
        changes: set[str] = set()
        reasons: list[str] = []
        new_cut = 0
        if stubbed:
            changes.add("replayed")
            reasons.append("replayed earlier cuts")
        if t and t % 7 == 0:
            new_cut = rng.randint(1500, 9000)
            changes.add("cut")
            reasons.append(f"free: break at unit {t * 2} (ttl-expired)")
        if filter_tokens:
            changes.add("filtered")
            reasons.append("tool filter: 2 declaration(s) not sent")
        removed = stubbed + new_cut + filter_tokens
        if not changes:
            reasons.append("nothing dead (break 0: ttl-expired)")
        status, error = 200, None
        if t == 5 and turns > 20:
            status, error = 529, "HTTP 529 from anthropic upstream"
        r_tok = r_usd = None
        if changes and not error:
            rate = {"claude-sonnet-4-5-20250929": 3e-6, "claude-opus-4-1-20250805": 15e-6}.get(model, 1e-6)
            r_tok = int((stubbed + filter_tokens) * rng.uniform(0.9, 1.0)) + new_cut
            r_usd = round((r_tok - new_cut) * rate * 0.1 + new_cut * rate * 1.25, 6)
        first = t == 0
        row = {
            "ts": ts, "session": session, "agent": None, "client": "claude-cli/2.1.332 (external, cli)",
            "api": "anthropic", "endpoint": "messages", "model": model, "status": status,
            "body_bytes": prompt * 3, "sent_bytes": (prompt - removed) * 3,
            "est_tokens_before": prompt, "est_tokens_after": prompt - removed,
            "input_tokens": None if error else rng.randint(1, 40),
            "cache_write_5m": None if error else (prompt - removed if first else grow + new_cut),
            "cache_write_1h": None if error else 0,
            "cache_read": None if error else (0 if first else prompt - grow - removed - new_cut),
            "output_tokens": None if error else rng.randint(60, 1800),
            "decision": label(changes), "reason": "; ".join(reasons), "tokens_removed": removed,
            "figures": '{"units":%d}' % (t * 2), "realized_tokens": r_tok, "realized_usd": r_usd,
            "ttfb_ms": rng.uniform(400, 2500), "total_ms": rng.uniform(2000, 30000), "error": error,
            "_filter_tokens": filter_tokens,  # not a column: what the filter savings table gets
            "project": seed.sessions[session]["project"],
            "regions": '{"system":%d,"tools":%d,"mcp_tools":%d,"messages":%d,"tool_results":%d}' % (
                3100, 9200, 4100, max(0, prompt - 16400) // 3, max(0, prompt - 16400) * 2 // 3),
        }
        if r_tok is not None:
            row.update({"realized_tier": "usage", "realized_tokens_by": "fit" if t >= 4 else "own_request",
                        "realized_bytes": (removed) * 3, "tokens_per_byte": round(1 / 3, 6), "ratio_pairs": t,
                        "ratio_error_pct": 1.5 if t >= 4 else None})
        if "cut" in changes or t % 3 == 0:
            row["figures"] = '{"units":%d,"dead_left":%d}' % (t * 2, rng.randint(0, 3000))
        seed.requests.append(row)
        stubbed += new_cut
        prompt += grow
        if t % 9 == 4:  # a sub-agent request and a count_tokens call in between: nothing to change
            seed.requests.append({**row, "ts": ts + 1, "agent": "agent-" + session[:4],
                                  "cache_read": 3000, "cache_write_5m": 900, "input_tokens": 5,
                                  "body_bytes": 3900 * 3, "sent_bytes": 3900 * 3,
                                  "est_tokens_before": 3900, "est_tokens_after": 3900, "decision": "unchanged",
                                  "reason": "nothing dead", "tokens_removed": 0, "realized_tokens": None,
                                  "realized_usd": None, "status": 200, "error": None, "realized_tier": None,
                                  "realized_tokens_by": None, "realized_bytes": None, "tokens_per_byte": None,
                                  "ratio_pairs": None, "ratio_error_pct": None, "_filter_tokens": 0})
            seed.requests.append({**seed.requests[-1], "ts": ts + 2, "agent": None, "endpoint": "count_tokens",
                                  "input_tokens": None, "cache_read": None, "cache_write_5m": None,
                                  "cache_write_1h": None, "output_tokens": None, "reason": ""})


# (cause, its detail, the provider's reason when the request asked): what pipeline/miss_watch.py and
# proxy/diagnostics.py record. TTL expiries are the most common, as in real transcripts.
MISS_KINDS = (
    ("ttl-expired", {"gap_s": 412.0, "ttl": "5m"}, None),
    ("ttl-expired", {"gap_s": 3900.0, "ttl": "1h"}, "previous_message_not_found"),
    ("ttl-expired", {"gap_s": 655.5, "ttl": "5m"}, None),
    ("model-switch", {"from": "claude-haiku-4-5-20251001"}, "model_changed"),
    ("tools-changed", {"added": ["mcp__github__create_issue"], "removed": []}, "tools_changed"),
    ("client-rewrite", {"break": 12}, "messages_changed"),
    ("settings-changed", {"fields": ["thinking"]}, None),
    ("unexplained", {}, "unavailable"),
)
MISS_RATE = {"claude-sonnet-4-5-20250929": 3e-6, "claude-opus-4-1-20250805": 15e-6}


def _misses(seed: Seed, rng: random.Random) -> None:
    """A cache miss on every 6th main-agent request that read the cache: its cause, tokens
    re-written and their cost (tokens x (5m write - read) at the model's input price)."""
    import json

    n = 0
    for row in seed.requests:
        if row["agent"] or row["endpoint"] != "messages" or row["error"] or not row["cache_read"]:
            continue
        n += 1
        if n % 6 != 2:
            continue
        cause, detail, provider = MISS_KINDS[rng.randrange(len(MISS_KINDS))]
        tokens = rng.randint(4_000, 40_000)
        row.update({"miss_cause": cause, "miss_tokens": tokens,
                    "miss_usd": round(tokens * MISS_RATE.get(row["model"], 1e-6) * (1.25 - 0.1), 6),
                    "miss_detail": json.dumps(detail), "provider_miss_reason": provider})


def _surgery_log(seed: Seed, rng: random.Random) -> None:
    conn = connect()
    spill = SpillStore()
    log = CutLog(conn)
    for r in seed.requests:
        if "cut" not in changes_of(r["decision"]):
            continue
        for j in range(rng.randint(1, 3)):
            tool = rng.choice(("Read", "Bash", "Grep"))
            content = f"[{tool} output {r['session']} {r['ts']:.0f} {j}] ".encode() * rng.randint(40, 400)
            if rng.random() < 0.9:
                sha = spill.put(content)
                seed.spilled.add(sha)
            else:
                sha = hashlib.sha256(content).hexdigest()  # the spill file was gc'd since
            tid = "toolu_01" + hashlib.sha1(f"{r['session']}{r['ts']}{j}".encode()).hexdigest()[:22]
            rec = CutRecord(tid, r["session"], "", r["ts"], rng.choice(KINDS), len(content) // 4, sha, 1,
                            hashlib.sha256(b"stub" + sha.encode()).hexdigest())
            seed.cuts.append(rec)
            seed.sessions[r["session"]].setdefault("calls", []).append((tid, tool))
            if tool == "Read":
                seed.sessions[r["session"]].setdefault("targets", {})[tid] = FILES[j % len(FILES)]
    log.record(seed.cuts)
    conn.close()


def _inventory(seed: Seed, rng: random.Random) -> None:
    store = ToolStore.open()
    declared = _declared()
    for session, info in seed.sessions.items():
        calls = list(info.get("calls", []))
        for k in range(rng.randint(5, 25)):
            calls.append((f"toolu_{session[:6]}_{k:03d}", rng.choice(CALLED)))
        rows = [r for r in seed.requests if r["session"] == session and r["endpoint"] == "messages"
                and not r["agent"]]
        for n, r in enumerate(rows):
            store.save_inventory(session, r["client"], r["model"], r["ts"], declared if n == 0 else None,
                                 calls if n == 0 else [], new_request=True,
                                 targets=info.get("targets") if n == 0 else None)
    store.add_removal("mcp__linear", "cli", forced=False, now=seed.now - 10 * DAY)
    seed.removals = ("mcp__linear",)
    for r in seed.requests:
        if "filtered" in changes_of(r["decision"]) and r["realized_tokens"] is not None:
            for name in ("mcp__linear__create_issue", "mcp__linear__search_issues"):
                row = (r["ts"], r["session"], "", r["model"], name, r["_filter_tokens"] // 2, "cache_read",
                       round(r["_filter_tokens"] // 2 * 0.3e-6, 8))
                seed.filter_savings.append(row)
    store.add_savings(seed.filter_savings)
    store.close()
