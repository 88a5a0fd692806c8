"""The dashboard's one kind of table: a row cursor, zebra stripes, columns given as (key, label).

Why one builder: every tab's tables (sessions, decisions, cuts, tools,
suggestions, usage, misses) are built the same way, and a table's column
keys are what ``update_cell`` and the tests address it by.
"""

from __future__ import annotations

from collections.abc import Iterable

from textual.widgets import DataTable


def row_table(table_id: str, columns: Iterable[tuple[str, str]]) -> DataTable:
    """A ``DataTable`` with id ``table_id``, a row cursor and stripes, and ``columns`` in order."""
    table: DataTable = DataTable(id=table_id, cursor_type="row", zebra_stripes=True)
    for key, label in columns:
        table.add_column(label, key=key)
    return table
