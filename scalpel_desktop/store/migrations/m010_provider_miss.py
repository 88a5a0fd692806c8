"""m010: the provider's own word on a request's cache miss (issue 24, ``proxy/diagnostics.py``).

With the ``cache_diagnostics`` setting on, a Messages request to the Claude
API names its conversation's previous answer, and the provider says where
the two requests diverged: ``provider_miss_reason`` is its
``cache_miss_reason.type`` (``model_changed``, ``system_changed``,
``tools_changed``, ``messages_changed``, ``previous_message_not_found``,
``unavailable``, or a newer one it adds), ``no_divergence`` when it found
none, ``pending`` when its comparison had not finished when it answered
(``wire/cache_diagnosis.py``); ``provider_missed_tokens`` its estimate of
the tokens that would have been read had the prefix matched, for the
``*_changed`` reasons. Beside the proxy's own ``miss_cause`` (m008), never
instead of it. NULL: not asked, or nothing to compare with (a first turn).
"""


def apply(conn) -> None:
    have = {r[1] for r in conn.execute("PRAGMA table_info(requests)")}
    for name, kind in (("provider_miss_reason", "TEXT"), ("provider_missed_tokens", "INTEGER")):
        if name not in have:
            conn.execute(f"ALTER TABLE requests ADD COLUMN {name} {kind}")
