"""m004: how each realized figure of a ledger row was obtained (SPEC 7: a figure says its source).

Columns rather than keys in ``figures``: the report sums the error bounds
and counts rows by source with SQL, and ``figures`` keeps numbers only in its
nested maps. NULL on rows without a realized saving (and on rows written
before this migration). See docs/ledger.md, "How each figure is obtained".
"""

SQL = """
ALTER TABLE requests ADD COLUMN realized_tier TEXT;       -- 'usage': the billing tier read from the usage counts
ALTER TABLE requests ADD COLUMN realized_tokens_by TEXT;  -- 'fit' | 'pooled' | 'own_request' | 'estimate'
ALTER TABLE requests ADD COLUMN realized_bytes INTEGER;   -- bytes removed behind realized_tokens
ALTER TABLE requests ADD COLUMN tokens_per_byte REAL;     -- the ratio they were converted with
ALTER TABLE requests ADD COLUMN ratio_pairs INTEGER;      -- usage pairs it was measured on
ALTER TABLE requests ADD COLUMN ratio_error_pct REAL;     -- its error bound in percent; NULL: no bound
"""
