"""One cell of the table: an upstream, a mode, a body size; every path, round by round.

Modes (each round sends every path the same body, who goes first rotating):

- ``growing``: each request is the previous one plus one turn (Claude Code's normal);
- ``retry``: the same body again;
- ``first sighting``: a conversation never seen before (a new session id, same
  size): a resume, a proxy restart;
- ``evicted``: ``EVICTING`` conversations of that size in turn, each request the
  next turn of one the proxy knows (its economist holds its state) but whose
  remembered body and analysis the memo and parse-reuse have dropped for the
  others (their budgets hold one or two such conversations, and eight at most);
- ``back to back``: growing, with no idle wait between calls;
- ``first sighting, back to back``: first sightings with no idle wait, so the
  work a path does after one answer overlaps the next request.

All but the two ``back to back`` modes wait until no server process uses CPU
before and after each call ("after idle": a real client sends its next request
seconds after an answer, once the model's turn and its tool calls are done).
The ``back to back`` modes send the next request the instant the answer is
read: the worst case for work done after the response. CPU per request: the
path's server process from just before the call to idle after it (back to
back: the whole cell's CPU over its rounds), and until the answer was read.
"""

from __future__ import annotations

from overhead.bodies import Conversation, first_sighting
from overhead.paths import PathClient, cpu_ms, settle

MODES = ("growing", "retry", "first sighting", "evicted", "back to back", "first sighting, back to back")
EVICTING = 10  # more conversations than the memo keeps (8 at most), whatever their size


def measure(paths: list[PathClient], mode: str, size: int, rounds: int, capture, tags) -> tuple[dict, dict, int]:
    """(seconds per call per path, {"all": CPU ms per request per path, "answer": CPU ms until the
    answer was read}, message count)."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; one of: {', '.join(MODES)}")
    pids = [p.pid for p in paths]
    instant = mode.endswith("back to back")
    conv = Conversation(capture, size, next(tags))
    convs = [conv] + [Conversation(capture, size, next(tags)) for _ in range(EVICTING - 1 if mode == "evicted" else 0)]
    for c in convs:
        body, headers = c.body(), c.headers
        for p in paths:  # warm: every path has seen each conversation once
            p.call(body, headers)
    settle(pids)
    totals: dict[str, list[float]] = {p.name: [] for p in paths}
    cpu: dict[str, list[float]] = {p.name: [] for p in paths}
    to_answer: dict[str, list[float]] = {p.name: [] for p in paths}
    start = {p.name: cpu_ms(p.pid) for p in paths}
    for i in range(rounds):
        if mode in ("growing", "back to back", "evicted"):
            c = convs[i % len(convs)]  # evicted: the one seen longest ago
            c.add_turn()
            body, headers = c.body(), c.headers
        elif mode.startswith("first sighting"):
            body, headers = first_sighting(conv.body(), conv, int(next(tags)))
        for p in paths[i % len(paths):] + paths[: i % len(paths)]:  # rotate who goes first
            if not instant:
                settle(pids)
            c0 = cpu_ms(p.pid)
            totals[p.name].append(p.call(body, headers))
            to_answer[p.name].append(cpu_ms(p.pid) - c0)
            if not instant:
                settle(pids)
                cpu[p.name].append(cpu_ms(p.pid) - c0)
    if instant:
        settle(pids)
        cpu = {p.name: [(cpu_ms(p.pid) - start[p.name]) / rounds] for p in paths}
    return totals, {"all": cpu, "answer": to_answer}, len(conv.doc["messages"])
