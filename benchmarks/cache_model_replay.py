"""How fast the cache model bills a long conversation (the bench replays 1,000s of requests).

Builds one conversation of N turns incrementally (PrefixBuilder: each turn hashes
only its new messages) and bills every request with the breakpoint moved to the
last block, like Claude Code. Prints requests/s and the total time.

    python benchmarks/cache_model_replay.py [N]
"""

from __future__ import annotations

import sys
import time

from scalpel_desktop.accounting.cache_model import PrefixBuilder, PromptCache


def main(n: int = 1000) -> None:
    tools = [{"name": f"tool{i}", "description": "d" * 800, "input_schema": {"type": "object"}} for i in range(15)]
    pb = PrefixBuilder()
    for t in tools:
        pb.add_tool(t)
    pb.add_system([{"type": "text", "text": "s" * 20000}])
    pb.start_messages({})
    pb.add_message("user", "Start the task.")
    cache = PromptCache()
    t0 = time.perf_counter()
    totals = [0, 0, 0]
    for turn in range(n):
        tid = f"toolu_{turn:06d}"
        pb.add_message("assistant", [{"type": "tool_use", "id": tid, "name": "Read", "input": {"file_path": f"/f{turn}"}}])
        pb.add_message("user", [{"type": "tool_result", "tool_use_id": tid, "content": "x" * 2000}])
        marks = {len(tools): "5m", len(pb.blocks) - 1: "5m"}
        u = cache.bill("model", pb.blocks, turn * 10.0, breakpoints=marks)
        totals[0] += u.cache_read
        totals[1] += u.cache_write
        totals[2] += u.input_tokens
    dt = time.perf_counter() - t0
    print(f"{n} requests, final prefix {len(pb.blocks)} blocks / {pb.total_tokens:,} tokens")
    print(f"billed in {dt:.2f} s = {n / dt:,.0f} requests/s; read {totals[0]:,} write {totals[1]:,} input {totals[2]:,}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1000)
