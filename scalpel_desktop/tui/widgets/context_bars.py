"""The context breakdown of one session as bars, like Claude Code's ``/context``.

One row per region (system prompt, tools, MCP tools, messages, tool results,
of which dead weight still carried), then free space in the window and what
scalpel removed; each row a bar of the window, its tokens and its share. The
title line says what is measured (the prompt total) and what is an estimate
(the split). It draws a ``views_data.ContextBreakdown``; it reads nothing.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from scalpel_desktop.tui import format as fmt

COLOURS = {"system": "#a371f7", "tools": "#4a8fe7", "mcp_tools": "#39c5cf", "messages": "#3fb950",
           "tool_results": "#f5c542", "dead": "#f85149", "free": "#6e7681", "removed": "#8b949e"}
LABEL_W = 16  # the longest label and a space: a label never runs into its bar
BAR_W = 8  # a row is LABEL_W + BAR_W + 15 = 39 cells: the pane (dashboard.tcss #sessions-context) has 40
DEAD_LABEL = "  of which dead"  # a sub-row of the tool results


def breakdown_text(ctx) -> Text:
    if ctx is None:
        return Text("No request of this session to break down.", style="dim")
    out = Text(no_wrap=True, overflow="ellipsis")
    how = "measured (usage)" if ctx.measured else "estimate (no usage)"
    out.append("Context ", style="bold")
    out.append(f"{fmt.tokens(ctx.total)} of {fmt.tokens(ctx.window)}", style="bold")
    out.append(f" · {how}\n", style="dim")
    window = max(1, ctx.window)

    def row(label: str, tokens: int | None, colour: str, unknown: str = "—") -> None:
        share = None if tokens is None else tokens / window
        out.append(f"{label:<{LABEL_W}}", style="dim" if label.startswith(" ") else "")
        out.append(fmt.bar(share, BAR_W), style=colour)
        out.append(f" {fmt.tokens(tokens) if tokens is not None else unknown:>9} {fmt.pct(share):>4}\n")

    if ctx.regions:
        for key, label, tokens in ctx.regions:
            row(label, tokens, COLOURS[key])
            if key == "tool_results":
                row(DEAD_LABEL, ctx.dead_left, COLOURS["dead"], unknown="n/a")
    else:
        out.append("split not recorded for this request (older ledger rows)\n", style="dim")
    row("Free space", ctx.free, COLOURS["free"])
    out.append(f"{'Removed':<{LABEL_W}}", style="")
    out.append(f"{fmt.tokens(ctx.removed)} tokens from this request by scalpel", style=COLOURS["removed"])
    out.append(f"\n{'':<{LABEL_W}}{ctx.cuts:,} cut(s), {fmt.tokens(ctx.cut_tokens)} tokens this session\n",
               style="dim")
    out.append("split by region: estimate, scaled to the measured total", style="dim italic")
    return out


class ContextBars(Static):
    """``show(breakdown)`` draws it (None: nothing to show)."""

    def show(self, ctx) -> None:
        self.ctx = ctx
        self.update(breakdown_text(ctx))
