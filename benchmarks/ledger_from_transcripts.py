"""Seed a ledger from real Claude Code transcripts, then print ``scalpel report`` for it.

Each distinct API request in the transcripts (a ``requestId`` among assistant
lines) becomes one ledger row with its real timestamp, session, model and the
provider's usage counts, exactly as the proxy would have recorded it (no
content). Used to produce the examples in docs/ledger.md:

    SCALPEL_HOME=$(mktemp -d) python benchmarks/ledger_from_transcripts.py ../shared/corpus/transcripts
    SCALPEL_HOME=... scalpel report --by model
"""

from __future__ import annotations

import json
import sys
from datetime import datetime
from pathlib import Path

from scalpel_desktop.wire.usage import Usage
from scalpel_desktop.store.ledger import LedgerWriter


def rows_from(root: Path):
    seen: set[str] = set()
    for path in sorted(root.rglob("*.jsonl")):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                d = json.loads(line)
            except ValueError:
                continue
            msg = d.get("message") if isinstance(d, dict) else None
            if d.get("type") != "assistant" or not isinstance(msg, dict) or not isinstance(msg.get("usage"), dict):
                continue
            rid = d.get("requestId") or msg.get("id")
            if not rid or rid in seen:
                continue
            seen.add(rid)
            u = Usage.from_anthropic(msg["usage"])
            ts = datetime.fromisoformat(d["timestamp"].replace("Z", "+00:00")).timestamp()
            yield {
                "ts": ts, "session": d.get("sessionId"), "agent": "sidechain" if d.get("isSidechain") else None,
                "client": f"claude-cli/{d.get('version', '?')}", "api": "anthropic", "endpoint": "messages",
                "model": msg.get("model"), "status": 200, "decision": "unchanged", "tokens_removed": 0,
                "input_tokens": u.input_tokens, "cache_write_5m": u.cache_write_5m, "cache_write_1h": u.cache_write_1h,
                "cache_read": u.cache_read, "output_tokens": u.output_tokens,
            }


def main(argv: list[str]) -> int:
    root = Path(argv[1] if len(argv) > 1 else "../shared/corpus/transcripts")
    w = LedgerWriter()
    n = sum(w.submit(r) for r in rows_from(root))
    w.close()
    print(f"seeded {n} requests into {w.path} (recording enabled: {w.enabled})")
    return 0 if w.enabled else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
