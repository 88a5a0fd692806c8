"""tui/widgets/row_table.py: the dashboard's tables, built one way."""

from __future__ import annotations

import asyncio

from textual.app import App

from scalpel_desktop.tui.widgets.row_table import row_table


class _One(App):
    def compose(self):
        yield row_table("t", (("a", "Alpha"), ("b", "Beta")))


def test_columns_in_order_addressed_by_their_keys_with_a_row_cursor():
    async def run():
        app = _One()
        async with app.run_test():
            table = app.query_one("#t")
            assert table.cursor_type == "row" and table.zebra_stripes
            assert [str(c.label) for c in table.ordered_columns] == ["Alpha", "Beta"]
            assert [c.key.value for c in table.ordered_columns] == ["a", "b"]

    asyncio.run(run())
