"""m006: the user's risk budget (surgery/budget.py, docs/economist.md).

``requests.banked_usd``: what the request's replayed stubs surely saved
(``realized.banked_credit``); ``requests.staked_usd``: a warm cut's priced
extra, staked from the budget (its figures hold the turns the economist
estimated). Their sums over the ledger are the budget a proxy starts with,
across restarts; a bet's outcome (the requests it really earned on before the
next break or the conversation's end) is read from the rows after it
(``store/budget_ledger.py``).
"""


def apply(conn) -> None:
    have = {r[1] for r in conn.execute("PRAGMA table_info(requests)")}
    if "banked_usd" not in have:
        conn.execute("ALTER TABLE requests ADD COLUMN banked_usd REAL")
    if "staked_usd" not in have:
        conn.execute("ALTER TABLE requests ADD COLUMN staked_usd REAL")
