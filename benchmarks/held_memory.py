"""How much memory a remembered body really holds, per raw byte (tracemalloc, real bodies).

Run: ``python benchmarks/held_memory.py [--corpus ../shared/corpus]``

The surgery memo and parse-reuse keep bodies alive between requests: the raw
bytes, the parsed document (``loads``), the conversation view's analysis
(``view_for``) and the layout (``locate``). Their budgets count all of it
through ``wire/held.py``, whose factors come from this measurement. For each
real body (the wire captures of Claude Code 2.0.77 and 2.1.332, and the bench's
bodies rebuilt from the transcripts, the largest request of each sequence) it
traces the allocations of each step while the result is kept alive, and prints
the ratios to the raw size: per body class and overall (bytes-weighted).
Nothing is asserted.
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
from scalpel_desktop.wire.held import DOC_PER_RAW_BYTE, LAYOUT_PER_RAW_BYTE, VIEW_PER_RAW_BYTE  # noqa: E402
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


def measure(raws: list[bytes]) -> tuple[int, int, int, int]:
    raw_total = doc_total = view_total = layout_total = 0
    for raw in raws:
        doc, d = traced(lambda: loads(raw))
        def analysed(doc=doc):
            view = view_for("messages", doc)
            if view is not None:  # what the stage computes on it and keeps with it
                view.unit_hashes()
                find_doom_spans(view, {}, tier=2)
            return view

        view, v = traced(analysed)
        _, lay = traced(lambda doc=doc: locate(raw, doc, None))
        raw_total += len(raw)
        doc_total += d
        view_total += v
        layout_total += lay
        del doc, view
    return raw_total, doc_total, view_total, layout_total


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default=str(REPO.parent / "shared" / "corpus"))
    args = ap.parse_args(argv)
    os.environ.setdefault("SCALPEL_HOME", tempfile.mkdtemp(prefix="scalpel-held-"))
    corpus = Path(args.corpus)
    rows = [("wire captures", wire_bodies(corpus)), ("bench bodies (transcripts)", transcript_bodies(corpus))]
    print("| bodies | n | raw MB | parsed doc / raw | view / raw | layout / raw |")
    print("|---|---:|---:|---:|---:|---:|")
    totals = [0, 0, 0, 0]
    for label, raws in rows:
        r, d, v, lay = measure(raws)
        totals = [a + b for a, b in zip(totals, (r, d, v, lay))]
        print(f"| {label} | {len(raws)} | {r / 1e6:.1f} | {d / max(1, r):.2f} | {v / max(1, r):.2f} | {lay / max(1, r):.3f} |")
    r, d, v, lay = totals
    print(f"| all (bytes-weighted) | | {r / 1e6:.1f} | {d / max(1, r):.2f} | {v / max(1, r):.2f} | {lay / max(1, r):.3f} |")
    print(f"\nwire/held.py counts: parsed doc {DOC_PER_RAW_BYTE} x raw, view {VIEW_PER_RAW_BYTE} x raw, "
          f"layout {LAYOUT_PER_RAW_BYTE} x raw")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
