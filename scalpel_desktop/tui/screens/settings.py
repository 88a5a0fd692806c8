"""Settings: pause, tier and policy, applied live through the running proxy's control API.

With no proxy running the saved values are shown, the controls disabled, and
the reason said on screen (SPEC 2: toggles act through the running proxy).
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Label, RadioButton, RadioSet, Static, Switch

from scalpel_desktop.tui import format as fmt
from scalpel_desktop.tui.messages import ControlRequested
from scalpel_desktop.tui.notice import today_words
from scalpel_desktop.tui.proxy import ProxyState

TIERS = ((1, "1: superseded reads, duplicates, failed commands"),
         (2, "2: also dead snapshots and stale large results"))
POLICIES = (("cold", "cold: only when the cache is cold (free)"),
            ("death", "death: also a result that just died, when it repays"),
            ("payback", "payback: also on a warm cache when it repays"),
            ("off", "off: never cut"))


class SettingsView(Vertical):
    def compose(self) -> ComposeResult:
        yield Static("Checking for a running proxy…", id="proxy-box", classes="card wide")
        yield Static("", id="settings-reason", classes="reason")
        with Horizontal(classes="switch-row"):
            yield Switch(False, id="pause-switch", disabled=True)
            yield Label("Paused (pure pass-through: forward everything unchanged)", classes="switch-label")
        with Horizontal(classes="switch-row"):
            yield Switch(False, id="filter-switch", disabled=True)
            yield Label("Tool filter for new sessions", classes="switch-label")
        with Horizontal(id="radios"):
            with Vertical(classes="radio-column"):
                yield Label("What may be cut (tier)", classes="radio-title")
                with RadioSet(id="tier-set", disabled=True):
                    for value, label in TIERS:
                        yield RadioButton(label, id=f"tier-{value}")
            with Vertical(classes="radio-column"):
                yield Label("When to cut (policy)", classes="radio-title")
                with RadioSet(id="policy-set", disabled=True):
                    for value, label in POLICIES:
                        yield RadioButton(label, id=f"policy-{value}")
        yield Static(Text("Keys: tab / shift+tab move between controls, space or enter flips or picks. "
                          "Every change goes through the running proxy's control API.", style="dim"),
                     classes="detail")

    def show_proxy(self, state: ProxyState, now: float) -> None:
        s = state.settings
        box = self.query_one("#proxy-box", Static)
        if state.running:
            st = state.status
            box.update(Text.assemble(
                ("● proxy running", "bold green"), f" on 127.0.0.1:{st.get('port')}  pid {st.get('pid')}  ",
                ("state ", "dim"), str(st.get("state")), ("  up ", "dim"), fmt.duration(float(st.get("uptime_s") or 0)),
                "\n", ("requests today ", "dim"), today_words(st),
                ("  errors ", "dim"), f"{st.get('errors', 0):,}", ("  restarts ", "dim"), f"{st.get('restarts', 0)}",
                ("  recording ", "dim"), "yes" if st.get("recording", True) else "NO",
                ("\nlast error ", "dim") if st.get("last_error") else "", str(st.get("last_error") or "")))
            reason = Text("Changes apply live and are saved to the config file.", style="dim")
        else:
            box.update(Text.assemble(("○ no proxy running", "bold yellow"),
                                     " — showing the saved settings (what the next start will use)"))
            reason = Text(f"Controls disabled: {state.reason}", style="yellow")
        self.query_one("#settings-reason", Static).update(reason)
        enabled = state.running
        for sid, key in (("#pause-switch", "paused"), ("#filter-switch", "tool_filter")):
            sw = self.query_one(sid, Switch)
            with sw.prevent(Switch.Changed):
                sw.value = bool(s.get(key))
            sw.disabled = not enabled
            sw.tooltip = None if enabled else state.detail
        for set_id, prefix, value in (("#tier-set", "tier", s.get("tier")), ("#policy-set", "policy", s.get("policy"))):
            rs = self.query_one(set_id, RadioSet)
            with rs.prevent(RadioSet.Changed, RadioButton.Changed):
                for button in rs.query(RadioButton):
                    button.value = button.id == f"{prefix}-{value}"
            rs.disabled = not enabled
            rs.tooltip = None if enabled else state.detail

    def on_switch_changed(self, event: Switch.Changed) -> None:
        event.stop()
        if event.switch.id == "pause-switch":
            action = "pause" if event.value else "resume"
            self.post_message(ControlRequested(action, action, {}))
        elif event.switch.id == "filter-switch":
            op = "on" if event.value else "off"
            self.post_message(ControlRequested(f"tool filter {op}", "tools", {"op": op, "source": "dashboard"}))

    def on_radio_set_changed(self, event: RadioSet.Changed) -> None:
        event.stop()
        bid = event.pressed.id or ""
        key, _, value = bid.partition("-")
        if key == "tier":
            self.post_message(ControlRequested(f"tier {value}", "settings", {"tier": int(value)}))
        elif key == "policy":
            self.post_message(ControlRequested(f"policy {value}", "settings", {"policy": value}))
