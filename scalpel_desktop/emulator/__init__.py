"""The emulated upstream: the judge of every claim scalpel-desktop makes.

An aiohttp server that answers like the Anthropic Messages API (JSON and SSE,
count_tokens, models) and the OpenAI Chat Completions and Responses APIs,
bills every request with the one prompt-cache model
(``accounting.cache_model``), validates like the real API, answers from a
script (``script``, ``scripts``), fails on demand (``faults``) and records the
exact bytes of every request (``record``). Tests use
``emulator.testing.running_emulator()``; people use ``scalpel emulator``.
See docs/emulator.md.
"""
