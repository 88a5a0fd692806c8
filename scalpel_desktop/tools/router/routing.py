"""The routing state of one MCP session: which tools are listed, and what a search reveals.

Pure (no I/O): ``stdio.py`` feeds it the upstream catalogue and the client's
calls, and writes its log lines. Rules:

* The first ``tools/list`` picks the listed set once: recently called tools
  first, then the best TF-IDF matches for the task hint, up to ``max_tools``.
  Without a usable signal (no hint terms the catalogue knows, no recent calls)
  the full catalogue is listed. The set then only grows (reveals), so repeated
  ``tools/list`` answers are identical: a client's prompt cache stays valid.
* Listed tools keep the upstream's order; the search meta-tool comes last and
  exists only while something is hidden.
* ``scalpel_search_tools`` reveals, in one batch, the best-matching hidden tools
  (up to ``reveal_batch``); a low-signal query reveals the whole catalogue.
  Each reveal changes the client's declarations, so its next request re-writes
  its whole prompt cache: every reveal is logged with that estimated cost.
"""

from __future__ import annotations

import json
from typing import Any, Callable

from scalpel_desktop.accounting.tokens import estimate_tokens
from scalpel_desktop.tools.router.rank import ToolIndex

META_NAME = "scalpel_search_tools"
REVEAL_BATCH = 5


def tool_tokens(tool: dict[str, Any]) -> int:
    return estimate_tokens(json.dumps(tool, separators=(",", ":"), ensure_ascii=False))


def first_sentence(text: Any, limit: int = 140) -> str:
    s = str(text or "").strip().split("\n", 1)[0]
    dot = s.find(". ")
    return (s[: dot + 1] if dot > 0 else s)[:limit]


class Router:
    def __init__(self, *, hint: str = "", recent: list[str] | None = None, max_tools: int = 15,
                 reveal_batch: int = REVEAL_BATCH, log: Callable[[str], None] = lambda s: None):
        self.hint = hint.strip()
        self.recent = list(recent or [])
        self.max_tools = max(1, int(max_tools))
        self.reveal_batch = max(1, int(reveal_batch))
        self.log = log
        self.catalog: list[dict[str, Any]] = []
        self.index = ToolIndex([])
        self.visible: set[str] | None = None
        self.reveals = 0

    # -- catalogue -------------------------------------------------------------
    @property
    def names(self) -> list[str]:
        return [str(t.get("name")) for t in self.catalog]

    def set_catalog(self, tools: list[dict[str, Any]]) -> None:
        """A new catalogue from the upstream; tools already listed or revealed stay listed."""
        self.catalog = [t for t in tools if isinstance(t, dict) and isinstance(t.get("name"), str)
                        and t.get("name") != META_NAME]
        self.index = ToolIndex(self.catalog)
        if self.visible is not None:
            keep = self.visible & set(self.names)
            self.visible = None
            self.decide()
            assert self.visible is not None
            self.visible |= keep

    def decide(self) -> set[str]:
        if self.visible is not None:
            return self.visible
        names = self.names
        recent = [n for n in self.recent if n in set(names)][: self.max_tools]
        if len(names) <= self.max_tools:
            self.visible, why = set(names), "the catalogue fits"
        elif self.hint and not self.index.low_signal(self.hint):
            picked = list(recent)
            for n, score in self.index.rank(self.hint):
                if len(picked) >= self.max_tools or score <= 0:
                    break
                if n not in picked:
                    picked.append(n)
            self.visible, why = set(picked), f"task hint {self.hint!r}" + (f" and {len(recent)} recent call(s)" if recent else "")
        elif recent:
            query = " ".join(n for n in recent)
            query += " " + " ".join(str(t.get("description") or "") for t in self.catalog if t["name"] in recent)
            picked = list(recent)
            for n, score in self.index.rank(query):
                if len(picked) >= self.max_tools or score <= 0:
                    break
                if n not in picked:
                    picked.append(n)
            self.visible, why = set(picked), f"{len(recent)} recently called tool(s)"
        else:
            self.visible, why = set(names), "no usable task hint and no recent calls: full catalogue"
        self._log_decision(why)
        return self.visible

    # -- answers -----------------------------------------------------------------
    def hidden(self) -> list[str]:
        visible = self.decide()
        return [n for n in self.names if n not in visible]

    def listing(self) -> list[dict[str, Any]]:
        visible = self.decide()
        tools = [t for t in self.catalog if t["name"] in visible]
        hidden = len(self.catalog) - len(tools)
        if hidden:
            tools.append(meta_tool(hidden))
        return tools

    def search(self, query: str) -> tuple[str, list[str]]:
        """The meta-tool's answer text, and the names revealed (empty: nothing changed)."""
        hidden = self.hidden()
        if not hidden:
            return "Every tool of this server is already listed; nothing to reveal.", []
        if self.index.low_signal(query):
            picked = list(hidden)
            why = "low-signal query: revealing the full catalogue"
        else:
            ranked = [(n, s) for n, s in self.index.rank(query) if s > 0]
            best = ranked[0][1] if ranked else 0.0  # over ALL tools: a listed tool may be the answer
            hidden_set = set(hidden)
            picked = [n for n, s in ranked if n in hidden_set and s >= 0.3 * best][: self.reveal_batch]
            why = f"best matches for {query!r}"
        if not picked:
            listed = [n for n, _s in (self.index.rank(query) if not self.index.low_signal(query) else [])
                      if n in self.visible and n != META_NAME][:3]
            return (f"No hidden tool matches {query!r}." +
                    (f" Already listed and matching: {', '.join(listed)}." if listed else "")), []
        assert self.visible is not None
        self.visible |= set(picked)
        self.reveals += 1
        listing = self.listing()
        tokens = sum(tool_tokens(t) for t in listing)
        self.log(f"reveal #{self.reveals}: +{len(picked)} tool(s) ({', '.join(picked)}) - {why}. "
                 f"Listed now: {len(listing)} tools, ~{tokens} tokens. Estimated cost: the client's tool "
                 f"declarations changed, so its next request re-writes its whole prompt cache (at least ~{tokens} "
                 f"tokens of tools at the cache-write rate, plus its system prompt and conversation).")
        by_name = {t["name"]: t for t in self.catalog}
        lines = [f"Revealed {len(picked)} tool(s); they are available from now on for the rest of this session:"]
        lines += [f"- {n}: {first_sentence(by_name[n].get('description'))}" for n in picked]
        return "\n".join(lines), picked

    def log_answer(self, listing: list[dict[str, Any]]) -> None:
        total = sum(tool_tokens(t) for t in self.catalog)
        listed = sum(tool_tokens(t) for t in listing)
        self.log(f"tools/list answered: {len(listing)} tool(s) listed (search tool included), {len(self.hidden())} hidden "
                 f"(~{listed} of ~{total} tokens; ~{max(0, total - listed)} tokens saved per request)")

    def _log_decision(self, why: str) -> None:
        assert self.visible is not None
        total = sum(tool_tokens(t) for t in self.catalog)
        listing = self.listing()
        listed = sum(tool_tokens(t) for t in listing)
        self.log(f"routing: listing {len(self.visible)} of {len(self.catalog)} tools"
                 + (" + the search tool" if len(listing) > len(self.visible) else "")
                 + f" (~{listed} of ~{total} tokens; ~{max(0, total - listed)} tokens saved per request) - {why}")


def meta_tool(hidden: int) -> dict[str, Any]:
    return {
        "name": META_NAME,
        "description": (f"Search the {hidden} tool(s) of this server that are not listed yet and make the best "
                        "matches available. Use it when no listed tool fits the task. Each search that reveals "
                        "tools changes your tool list."),
        "inputSchema": {
            "type": "object",
            "properties": {"query": {"type": "string", "description": "A few words describing what you need to do."}},
            "required": ["query"],
        },
    }
