"""Speed of the surgery core on Claude-Code-shaped bodies of ~300 KB and ~2.9 MB.

Prints median milliseconds for: parse (orjson), building the view,
unit_hashes, find_doom_spans, re-applying logged cuts, cutting, validating,
serializing; then for the next request of the same conversation, parsed and
viewed re-using the previous request's work (``pipeline/parse_reuse.py``). Run: ``python benchmarks/surgery_core.py``.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time

os.environ.setdefault("SCALPEL_HOME", tempfile.mkdtemp(prefix="scalpel-bench-"))
os.environ["HOME"] = tempfile.mkdtemp(prefix="scalpel-bench-home-")

from scalpel_desktop.store import db  # noqa: E402
from scalpel_desktop.store.spill import SpillStore  # noqa: E402
from scalpel_desktop.store.cutlog import CutLog  # noqa: E402
from scalpel_desktop.surgery.doom import find_doom_spans  # noqa: E402
from scalpel_desktop.surgery.surgeon import Surgeon  # noqa: E402
from scalpel_desktop.surgery.testing import SessionBuilder, file_text  # noqa: E402
from scalpel_desktop.surgery.validate import validate_rewrite  # noqa: E402
from scalpel_desktop.wire import jsoncodec  # noqa: E402
from scalpel_desktop.pipeline.parse_reuse import ParseReuse  # noqa: E402
from scalpel_desktop.wire.formats import view_for  # noqa: E402


def build(target_bytes: int, with_previous: bool = False):
    b = SessionBuilder()
    i = 0
    while True:
        f = f"/home/user/proj/src/mod{i % 40}.py"
        k = i % 6
        if k == 0:
            b.call("Read", {"file_path": f}, file_text(f, 60, salt=str(i)))
        elif k == 1:
            b.call("Edit", {"file_path": f, "old_string": "a", "new_string": "b"}, f"The file {f} has been updated.")
        elif k == 2:
            b.calls([("Bash", {"command": f"pytest -k t{i}"}, "Exit code 1\n" + "E assert 1 == 2\n" * 40, True),
                     ("Grep", {"pattern": f"x{i}"}, f"src/mod{i}.py:1: x\n" * 30, None)])
        elif k == 3:
            b.call("Bash", {"command": "git status"}, "On branch main\n" + "modified: src/x.py\n" * 30, False)
        elif k == 4:
            b.call("WebFetch", {"url": f"https://example.com/{i}"}, "lorem ipsum dolor sit amet " * 250)
        else:
            b.text(f"Progress note {i}: " + "words " * 40)
        i += 1
        if i % 20 == 0 and len(jsoncodec.dumps(b.messages)) > target_bytes:
            break
    if not with_previous:
        return jsoncodec.dumps(b.body())
    before = jsoncodec.dumps(b.body())
    b.call("Bash", {"command": "git status"}, "On branch main\nnothing to commit\n")
    return before, jsoncodec.dumps(b.body())


def median_ms(fn, n=15):
    out = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1000)
    return statistics.median(out)


def main() -> int:
    conn = db.connect()
    for target in (300_000, 2_900_000):
        raw = build(target)
        doc = jsoncodec.loads(raw)
        v = view_for("messages", doc)
        spans = find_doom_spans(v, None, 2)
        surgeon = Surgeon(SpillStore(), CutLog(conn))
        surgeon.cut(v, spans, "bench", "")
        surgeon.commit()
        row = {
            "bytes": len(raw),
            "results": len(v.tool_results),
            "spans": len(spans),
            "parse": median_ms(lambda: jsoncodec.loads(raw)),
            "view": median_ms(lambda: view_for("messages", doc)),
            "unit_hashes": median_ms(lambda: view_for("messages", doc).unit_hashes()),
            "doom": median_ms(lambda: find_doom_spans(view_for("messages", doc), None, 2)),
            "reapply": median_ms(lambda: surgeon.reapply(view_for("messages", doc))),
            "serialize": median_ms(lambda: jsoncodec.dumps(doc)),
        }
        def cut_and_validate():
            vv = view_for("messages", doc)
            s = Surgeon(SpillStore(), CutLog(conn))
            s.cut(vv, spans, "bench", "")
            validate_rewrite(doc, vv.doc)
            vv.serialize()
        row["cut+validate+serialize"] = median_ms(cut_and_validate, 5)
        # the next request of the same conversation, re-using the previous parse and view
        before, after = build(target, with_previous=True)
        reuse = ParseReuse(min_bytes=0)
        prev = reuse.parse(before)
        prev_view = view_for("messages", prev.doc)
        prev_view.unit_hashes()

        def incremental():
            p = reuse.parse(after)  # re-uses the last body remembered (``before``, then ``after``)
            v = view_for("messages", p.doc, previous=prev_view)
            v.unit_hashes()
            return p, v

        row["incr parse+view+hashes"] = median_ms(incremental)
        _, v_next = incremental()
        row["incr doom"] = median_ms(lambda: find_doom_spans(v_next, None, 2))
        surgeon.reapply(prev_view)  # the previous request's results: digests cached on them
        row["incr reapply"] = median_ms(lambda: surgeon.reapply(incremental()[1], previous=prev_view)) - row["incr parse+view+hashes"]
        print(" ".join(f"{k}={v:.2f}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
