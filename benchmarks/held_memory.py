"""How much memory a remembered body really holds, per raw byte (tracemalloc, real bodies).

Run: ``python benchmarks/held_memory.py [--corpus ../shared/corpus]``

The surgery memo and parse-reuse keep bodies alive between requests: the raw
bytes, the parsed document (``loads``; once serialised by ``locate``, with the
UTF-8 copies its non-ASCII strings keep), the conversation view's analysis
(``view_for``) and the layout (``locate``). Their budgets count all of it
through ``wire/held.py``, whose factors come from this measurement. For each
real body (the wire captures of Claude Code 2.0.77 and 2.1.332, the bench's
bodies rebuilt from the transcripts, the largest request of each sequence,
and the 2.1.332 capture grown to 2.6 MB both ways by ``proxy_overhead``'s
builders) it traces the allocations of each step while the result is kept
alive, and prints the ratios to the raw size and what ``wire/held.py``
estimates against what was measured (at least 1: never counted short),
per body class and overall (bytes-weighted). Nothing is asserted.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import tempfile
import tracemalloc
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from scalpel_desktop.surgery.doom import find_doom_spans  # noqa: E402
from scalpel_desktop.wire.formats import view_for  # noqa: E402
from scalpel_desktop.wire.held import (  # noqa: E402
    DOC_PER_MESSAGE, DOC_PER_RAW_BYTE, LAYOUT_PER_MESSAGE, VIEW_PER_MESSAGE, VIEW_PER_RAW_BYTE, doc_bytes,
    layout_bytes, view_bytes)
from scalpel_desktop.wire.jsoncodec import dumps, loads  # noqa: E402
from scalpel_desktop.wire.layout import locate  # noqa: E402


def traced(fn):
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    kept = fn()
    size = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    return kept, size


def wire_bodies(corpus: Path) -> list[bytes]:
    out = []
    for f in sorted((corpus / "wire").glob("*/requests*.jsonl")):
        for line in f.read_text().splitlines():
            rec = json.loads(line)
            body = rec.get("body")
            if isinstance(body, dict) and isinstance(body.get("messages"), list):
                out.append(dumps(body))
            elif isinstance(body, str) and body.startswith("{"):
                out.append(body.encode())
    return out


def transcript_bodies(corpus: Path) -> list[bytes]:
    from scalpel_desktop.bench.reader import iter_sequences, read_corpus
    from scalpel_desktop.bench.stage_driver import SequenceBodies

    out = []
    for seq in iter_sequences(read_corpus(corpus / "transcripts")):
        if len(seq.requests) < 2:
            continue
        bodies = SequenceBodies(seq, {}, 2)
        k = len(seq.requests) - 1
        out.append(dumps(loads(bodies.doc(k)[0])))  # a fresh parse: no objects shared with other bodies
    return out


def grown_bodies() -> list[bytes]:
    """The 2.1.332 capture grown to 2.6 MB both ways (``proxy_overhead``'s builders), if importable."""
    try:
        sys.path.insert(0, str(REPO / "benchmarks"))
        from overhead.bodies import CAPTURE, Conversation, load_capture
    except ImportError:
        return []
    if not CAPTURE.exists():
        return []
    capture, out = load_capture(), []
    for growth in ("reads", "real"):
        Conversation.growth = growth
        out.append(Conversation(capture, 2_600_000, "000001").body())
    return out


def measure(raws: list[bytes]) -> tuple[int, int, int, int, int, int]:
    """(raw, document, view, layout, estimated, messages) totals. The document is traced through
    ``locate``, which serialises every message: the UTF-8 copies non-ASCII strings keep from then
    on belong to the document (they live as long as it does)."""
    raw_total = doc_total = view_total = layout_total = est_total = msgs_total = 0
    for raw in raws:
        def parsed_and_located():
            doc = loads(raw)
            return doc, locate(raw, doc, None)

        (doc, layout), d = traced(parsed_and_located)
        _, lay = traced(lambda doc=doc: locate(raw, doc, None))  # again: the UTF-8 copies exist by now, the layout alone

        def analysed(doc=doc):
            view = view_for("messages", doc)
            if view is not None:  # what the stage computes on it and keeps with it
                view.unit_hashes()
                find_doom_spans(view, {}, tier=2)
            return view

        view, v = traced(analysed)
        m = len(doc.get("messages") or []) if isinstance(doc, dict) else 0
        raw_total += len(raw)
        doc_total += d - lay  # the layout itself is counted apart
        view_total += v
        layout_total += lay
        msgs_total += m
        est_total += doc_bytes(len(raw), m) + view_bytes(len(raw), m) + layout_bytes(m)
        del doc, view, layout
    return raw_total, doc_total, view_total, layout_total, est_total, msgs_total


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default=str(REPO.parent / "shared" / "corpus"))
    args = ap.parse_args(argv)
    os.environ.setdefault("SCALPEL_HOME", tempfile.mkdtemp(prefix="scalpel-held-"))
    corpus = Path(args.corpus)
    grown = grown_bodies()
    rows = [("wire captures", wire_bodies(corpus)), ("bench bodies (transcripts)", transcript_bodies(corpus))]
    rows += [(f"2.1.332 grown to 2.6 MB ({g})", [b]) for g, b in zip(("reads", "real"), grown)]
    print("| bodies | n | raw MB | messages | parsed doc / raw | view / raw | layout / raw | estimate / measured |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    totals = [0] * 6
    for label, raws in rows:
        r, d, v, lay, est, m = measure(raws)
        totals = [a + b for a, b in zip(totals, (r, d, v, lay, est, m))]
        print(f"| {label} | {len(raws)} | {r / 1e6:.1f} | {m:,} | {d / max(1, r):.2f} | {v / max(1, r):.2f} "
              f"| {lay / max(1, r):.3f} | {est / max(1, d + v + lay):.2f} |")
    r, d, v, lay, est, m = totals
    print(f"| all (bytes-weighted) | | {r / 1e6:.1f} | {m:,} | {d / max(1, r):.2f} | {v / max(1, r):.2f} "
          f"| {lay / max(1, r):.3f} | {est / max(1, d + v + lay):.2f} |")
    print(f"\nwire/held.py counts: parsed doc {DOC_PER_RAW_BYTE} x raw + {DOC_PER_MESSAGE} B/message, "
          f"view {VIEW_PER_RAW_BYTE} x raw + {VIEW_PER_MESSAGE} B/message, layout {LAYOUT_PER_MESSAGE} B/message")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
