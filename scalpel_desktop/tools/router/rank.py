"""A small local TF-IDF index over MCP tool declarations. No network, no model.

Documents are a tool's name (split on ``_``, ``-``, ``.`` and camelCase,
counted three times: names are the densest signal), its description and the
names and descriptions of its parameters. Terms are lower-cased, stop words
dropped, and lightly stemmed (plural and verb endings), so "issues" meets
"issue" and "creating" meets "create".
"""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Any, Iterable

_WORD = re.compile(r"[A-Za-z0-9]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
STOP = frozenset("""a an and any are as at be by can do does for from get has have how i if in into is it its
of on or the that this to use used uses using want was we what when which will with you your all one
tool tools given specified value""".split())


def stem(word: str) -> str:
    """A light suffix stripper: issues/issue, creating/created/create, replies/reply meet."""
    w = word
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    if len(w) > 4 and w.endswith(("sses", "xes", "ches", "shes", "zes")):
        w = w[:-2]
    elif len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    if len(w) > 5 and w.endswith("ing"):
        w = w[:-3]
    elif len(w) > 4 and w.endswith("ed"):
        w = w[:-2]
    if len(w) > 4 and w.endswith("e"):
        w = w[:-1]
    return w


def terms(text: str) -> list[str]:
    text = _CAMEL.sub(" ", text or "")
    out = []
    for w in _WORD.findall(text.replace("_", " ")):
        w = w.lower()
        if w in STOP or len(w) < 2:
            continue
        out.append(stem(w))
    return out


def tool_text(tool: dict[str, Any]) -> list[str]:
    name = str(tool.get("name", ""))
    words = terms(name) * 3 + terms(str(tool.get("title") or "")) + terms(str(tool.get("description") or ""))
    schema = tool.get("inputSchema") or tool.get("input_schema") or {}
    props = schema.get("properties") if isinstance(schema, dict) else None
    if isinstance(props, dict):
        for pname, spec in props.items():
            words += terms(str(pname))
            if isinstance(spec, dict):
                words += terms(str(spec.get("description") or ""))
    return words


class ToolIndex:
    def __init__(self, tools: Iterable[dict[str, Any]]):
        self.names: list[str] = []
        docs: list[Counter] = []
        for t in tools:
            self.names.append(str(t.get("name", "")))
            docs.append(Counter(tool_text(t)))
        n = len(docs)
        df: Counter = Counter()
        for d in docs:
            df.update(d.keys())
        self.idf = {w: math.log((1 + n) / (1 + c)) + 1.0 for w, c in df.items()}
        self.vectors: list[dict[str, float]] = []
        for d in docs:
            v = {w: (1 + math.log(c)) * self.idf[w] for w, c in d.items()}
            norm = math.sqrt(sum(x * x for x in v.values())) or 1.0
            self.vectors.append({w: x / norm for w, x in v.items()})

    def known_terms(self, query: str) -> list[str]:
        return [w for w in terms(query) if w in self.idf]

    def scores(self, query: str) -> dict[str, float]:
        q = Counter(self.known_terms(query))
        if not q:
            return {n: 0.0 for n in self.names}
        qv = {w: (1 + math.log(c)) * self.idf[w] for w, c in q.items()}
        norm = math.sqrt(sum(x * x for x in qv.values())) or 1.0
        return {name: sum(vec.get(w, 0.0) * x / norm for w, x in qv.items())
                for name, vec in zip(self.names, self.vectors)}

    def rank(self, query: str, among: Iterable[str] | None = None) -> list[tuple[str, float]]:
        """(name, score) best first; ties keep catalogue order."""
        allowed = None if among is None else set(among)
        s = self.scores(query)
        order = {n: i for i, n in enumerate(self.names)}
        items = [(n, sc) for n, sc in s.items() if allowed is None or n in allowed]
        return sorted(items, key=lambda x: (-x[1], order[x[0]]))

    def low_signal(self, query: str, min_score: float = 0.05) -> bool:
        """No query term is in the catalogue's vocabulary, or nothing scores above ``min_score``."""
        if not self.known_terms(query):
            return True
        return max(self.scores(query).values(), default=0.0) < min_score
