"""The parts of ``benchmarks/proxy_overhead.py``: one module per job.

- ``upstreams``: the emulated upstreams (nodelay, nagle) and the bare aiohttp forward;
- ``bodies``: real Claude Code 2.1.332 bodies grown to a size, and first-sighting copies;
- ``paths``: the three server processes and the keep-alive client that times a call;
- ``modes``: one cell (upstream x mode x size): the rounds, paired per round;
- ``table``: percentiles and the markdown;
- ``load``: scalpel's RSS over many requests, and 200 concurrent streams.
"""
