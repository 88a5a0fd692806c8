"""Hold one long, mostly silent stream open through the proxy (default: 10 minutes).

    python benchmarks/soak_stream.py [--seconds 600] [--silence 60]

The emulated upstream answers an Anthropic stream that goes quiet for
``--silence`` seconds at a time (no bytes at all, not even pings) until
``--seconds`` have passed; the official ``anthropic`` SDK reads it through
the proxy (the runtime, as ``scalpel start`` runs it). Prints how long the
stream stayed open, the time to first byte, and whether the final message
(with its usage) arrived intact. The test suite checks the short version
(20 seconds with 5-second silences); this is the full-length run.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=600.0, help="Total stream length (default 600).")
    ap.add_argument("--silence", type=float, default=60.0, help="Length of each silence (default 60).")
    args = ap.parse_args()
    os.environ.setdefault("SCALPEL_HOME", tempfile.mkdtemp(prefix="scalpel-soak-"))

    import anthropic

    from scalpel_desktop.config import Config
    from scalpel_desktop.emulator.script import Script, Turn
    from scalpel_desktop.emulator.testing import running_emulator
    from scalpel_desktop.runtime import Runtime

    n = max(1, int(round(args.seconds / args.silence)))
    silences = [[i + 1, args.seconds / n] for i in range(n)]  # after event 1, 2, ...: one silence each
    # 24 characters per text delta: enough deltas for one silence after each of the first n events.
    script = Script(main=(Turn(text="still here, still streaming. " * (n + 2)),))
    with running_emulator(script) as emu:
        rt = Runtime(Config.load(), {"anthropic_upstream": emu.url}, port=0).start()
        try:
            emu.fault("slow", silences=silences)
            client = anthropic.Anthropic(base_url=f"http://127.0.0.1:{rt.port}", api_key="sk-soak", max_retries=0,
                                         timeout=args.seconds + 120)
            t0 = time.monotonic()
            ttfb = None
            events = 0
            with client.messages.stream(model="claude-sonnet-4-6", max_tokens=50,
                                        messages=[{"role": "user", "content": "soak"}]) as stream:
                for _ in stream:
                    events += 1
                    if ttfb is None:
                        ttfb = time.monotonic() - t0
                final = stream.get_final_message()
            elapsed = time.monotonic() - t0
            ok = final.stop_reason == "end_turn" and final.usage.output_tokens > 0
            st = rt.status()
            print(f"stream open {elapsed:.1f} s ({n} silences of {args.seconds / n:.1f} s), TTFB {ttfb * 1000:.1f} ms, "
                  f"{events} events, final message {'intact' if ok else 'MISSING'}, "
                  f"usage tapped: in {st['tokens_in']} out {st['tokens_out']}, proxy errors {st['errors']}")
            return 0 if ok and elapsed >= args.seconds * 0.95 else 1
        finally:
            rt.stop()


if __name__ == "__main__":
    sys.exit(main())
