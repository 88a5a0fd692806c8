"""The surgeon: replaces dead results with stubs, spill first, log last.

Order of a cut, and why:

1. spill the original content (content-addressed, fsynced, 0600; the whole
   cut as one batch): no spill, no cut, so every removed byte is recoverable
   (in the proxy a spill not on disk within ``write_wait_ms`` counts as not
   spilled: the request does not wait on a slow or full disk);
2. replace the content in the view (copy-on-write: the parsed original stays
   intact for the validator);
3. log the cut, but only in ``commit()``, which the pipeline stage calls once
   the rewritten body has passed ``validate_rewrite``: a body that is never
   sent must leave no cut behind to be re-applied later (and a cut the log
   did not take within the bound is not sent: ``CutLog.record_within``).

``reapply`` makes every earlier cut stick: any tool result in the request
whose id is in the log and whose content still hashes to the logged
original is replaced by the regenerated stub, checked against the logged
stub hash, whatever the conversation key (a resumed conversation may come
back under a new session id). Without it the prefix would change back and
the cache would miss.

Hashes are over the content's compact JSON with cache markers removed (a
marker nested in a result's content may move; the content does not).
"""

from __future__ import annotations

import hashlib
import logging
import time
from dataclasses import dataclass
from typing import Callable, Iterable

from scalpel_desktop import clock
from scalpel_desktop.accounting.tokens import estimate_tokens
from scalpel_desktop.store.offpath import Worker
from scalpel_desktop.store.spill import SpillError, SpillStore
from scalpel_desktop.store.cutlog import CutLog, CutRecord
from scalpel_desktop.surgery.doom import DoomSpan, is_stub
from scalpel_desktop.surgery.stub import STUB_VERSION, spill_display_dir, stub_content, stub_text
from scalpel_desktop.wire.hashing import canonical_bytes
from scalpel_desktop.wire.view import ConversationView

log = logging.getLogger("scalpel.surgery")


@dataclass(frozen=True)
class Cut:
    tool_use_id: str
    kind: str
    tokens: int  # estimated tokens of the original content
    stub_tokens: int  # estimated tokens of the stub
    original_sha256: str
    stub_sha256: str
    stub_version: int
    spill_path: str  # home-relative ("~/...") where the original is
    unit_index: int
    died_at_unit: int
    session: str
    agent: str

    @property
    def saved_tokens(self) -> int:
        return max(0, self.tokens - self.stub_tokens)


def content_sha(content) -> tuple[bytes, str]:
    data = canonical_bytes(content)
    return data, hashlib.sha256(data).hexdigest()


def result_sha(result) -> str:
    """sha256 of a result's original content, cached on the (shared, never mutated) ToolResult."""
    digest = result.__dict__.get("_content_sha")
    if digest is None:
        digest = content_sha(result.content)[1]
        result.__dict__["_content_sha"] = digest
    return digest


def _same_cut(previous: ConversationView, tid: str, rec: CutRecord) -> bool:
    """previous's replacement of ``tid`` is exactly the logged stub."""
    content = previous.replaced.get(tid)
    return content is not None and content_sha(content)[1] == rec.stub_sha256


class SpillSlow(SpillError):
    """A spill not on disk within the request's bound: the disk is slow, not failing."""


class Surgeon:
    def __init__(self, spill: SpillStore, cutlog: CutLog, wait_s: Callable[[], float] | None = None):
        """``wait_s``: how long a request may wait for a spill or the cut log (the proxy's
        ``write_wait_ms``); None: as long as they take (tests, the bench)."""
        self.spill = spill
        self.cutlog = cutlog
        self.wait_s = wait_s
        self.spill_worker = Worker("spill")
        self._deadline: float | None = None  # of the current cut's writes (spill, then log)
        self._display_dir = spill_display_dir(spill.dir)
        self._pending: list[Cut] = []
        #: Why the latest spill write failed on the disk itself (full, read-only, ...), cleared by
        #: the next spill that lands; a write that was only slow does not count. The runtime's
        #: status shows it: no spill, no cut, so while it is set nothing new is cut.
        self.spill_problem: str | None = None

    def _bound(self) -> float | None:
        """What is left of this request's write budget: the spill and the log share one bound
        (a request waits ``write_wait_ms`` in all, not per write)."""
        if self.wait_s is None:
            return None
        if self._deadline is not None:
            return max(0.005, self._deadline - time.monotonic())
        try:
            bound = max(0.0, float(self.wait_s()))
        except Exception:  # noqa: BLE001 - a bad setting: the default bound
            bound = 0.05
        self._deadline = time.monotonic() + bound
        return bound

    def _spill(self, contents: list[bytes]) -> list:
        """``spill.put_many(contents)``, waited on for the bound at most: what is not on disk
        by then is a SpillError (no spill, no cut); the write itself finishes off the path."""
        bound = self._bound()
        if bound is None or not contents:
            return self.spill.put_many(contents)
        if self.spill_worker.busy:  # an earlier spill still has the disk: do not queue behind it
            return [SpillSlow("the spill dir is still busy with an earlier write")] * len(contents)
        job = self.spill_worker.call(lambda: self.spill.put_many(contents), bound)
        if not job.done:
            return [SpillSlow(f"spill not on disk within {bound * 1000:.0f} ms")] * len(contents)
        if job.error is not None:
            return [job.error] * len(contents)
        return job.result

    # -- re-applying what was cut before ------------------------------------
    def reapply(self, view: ConversationView, previous: ConversationView | None = None) -> int:
        """Re-apply logged cuts to ``view``; return how many results were replaced.

        ``previous``: the view of the conversation's previous request, which
        ``view`` was built upon (``view_for(..., previous=...)``); its rewritten
        messages holding only logged cuts are taken over as they are.
        """
        ids = [r.id for r in view.tool_results]
        if not ids:
            return 0
        records = self.cutlog.lookup(ids)
        n = 0
        if previous is not None and records:
            n += view.adopt(previous, {t for t in previous.replaced if t in records and _same_cut(previous, t, records[t])})
        for tid, rec in records.items():
            r = view.result(tid)
            if r is None or tid in view.replaced or is_stub(r.content):
                continue
            if result_sha(r) != rec.original_sha256:
                continue  # the client sent different content under this id: leave it
            try:
                new = stub_content(r.content, stub_text(rec.kind, rec.tokens, rec.original_sha256, rec.stub_version, self._display_dir), view.text_block_type)
            except ValueError:
                log.warning("cut %s: unknown stub version %s; not re-applied", tid, rec.stub_version)
                continue
            if content_sha(new)[1] != rec.stub_sha256:
                log.warning("cut %s: regenerated stub differs from the logged one (spill dir moved?); not re-applied", tid)
                continue
            view.replace_result_content(tid, new)
            n += 1
        return n

    # -- new cuts -----------------------------------------------------------
    def cut(self, view: ConversationView, spans: Iterable[DoomSpan], session: str = "", agent: str = "") -> list[Cut]:
        """Spill and stub every span it can; the cuts stay pending until ``commit``."""
        self._deadline = None  # a new request's write budget starts here
        done: list[Cut] = []
        seen: set[str] = set()
        chosen: list[tuple[DoomSpan, bytes, str]] = []
        for span in spans:
            r = view.result(span.tool_use_id)
            if r is None or span.tool_use_id in seen or not r.understood or is_stub(r.content):
                continue
            seen.add(span.tool_use_id)
            data, digest = content_sha(r.content)
            chosen.append((span, data, digest))
        # One durable batch for the whole cut: the fsyncs are issued together.
        try:
            stored_all: list = self._spill([data for _, data, _ in chosen])
        except (OSError, ValueError) as e:
            stored_all = [e] * len(chosen)
        failed: list[tuple[str, BaseException]] = []
        for (span, _, digest), stored in zip(chosen, stored_all):
            if isinstance(stored, BaseException):  # no spill, no cut
                failed.append((span.tool_use_id, stored))
                continue
            if stored != digest:
                continue
            r = view.result(span.tool_use_id)
            text = stub_text(span.kind, span.tokens, digest, STUB_VERSION, self._display_dir)
            new = stub_content(r.content, text, view.text_block_type)
            view.replace_result_content(span.tool_use_id, new)
            done.append(
                Cut(
                    tool_use_id=span.tool_use_id,
                    kind=span.kind,
                    tokens=span.tokens,
                    stub_tokens=estimate_tokens(text),
                    original_sha256=digest,
                    stub_sha256=content_sha(new)[1],
                    stub_version=STUB_VERSION,
                    spill_path=f"{self._display_dir}/{digest[:2]}/{digest}",
                    unit_index=span.unit_index,
                    died_at_unit=span.died_at_unit,
                    session=session,
                    agent=agent,
                )
            )
        if failed:
            log.warning("spill failed for %d result(s) (%s ...), not cut: %s", len(failed), failed[0][0], failed[0][1])
        disk = [e for _, e in failed if not isinstance(e, SpillSlow)]
        if disk:
            self.spill_problem = str(disk[0])
        elif done:
            self.spill_problem = None
        self._pending.extend(done)
        return done

    def commit(self, cuts: Iterable[Cut] | None = None) -> int:
        """Log ``cuts`` (default: every pending one) once the rewritten body validated; the
        number logged. 0 for cuts that could not be logged within the bound: they must not
        be sent (the log is what replays them, byte for byte, on every later request)."""
        chosen = list(self._pending if cuts is None else cuts)
        ids = {c.tool_use_id for c in chosen}
        self._pending = [c for c in self._pending if c.tool_use_id not in ids]
        t = clock.now()
        records = [CutRecord(c.tool_use_id, c.session, c.agent, t, c.kind, c.tokens, c.original_sha256,
                             c.stub_version, c.stub_sha256) for c in chosen]
        if not records:
            return 0
        ok = self.cutlog.record_within(records, self._bound())
        self._deadline = None
        return len(records) if ok else 0

    def discard(self, cuts: Iterable[Cut] | None = None) -> None:
        """Forget pending cuts (the body failed validation or was not sent). Spill files stay."""
        if cuts is None:
            self._pending = []
            return
        ids = {c.tool_use_id for c in cuts}
        self._pending = [c for c in self._pending if c.tool_use_id not in ids]
