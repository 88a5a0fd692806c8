"""The menu model through pystray's dummy backend: texts, checks, radios, default; items emit names only."""

from __future__ import annotations

import pystray

from scalpel_desktop.tray.menu import COMMANDS, TrayState, build_pystray_menu, entries


def _menu(state: TrayState, icon_cls=pystray.Icon):
    emitted: list[str] = []
    menu = build_pystray_menu(pystray, lambda: state, emitted.append)
    icon = icon_cls("t", None, "t", menu)
    return icon, [i for i in menu.items if i is not pystray.Menu.SEPARATOR], emitted


def test_every_entry_emits_its_command_name_and_nothing_else():
    state = TrayState(running=True, port=4242, icon="active")
    icon, items, emitted = _menu(state)
    for item in items:
        if item.enabled:
            item(icon)
    assert emitted == [e.command for e in entries() if e.command]
    assert set(emitted) == set(COMMANDS)


def test_status_line_is_disabled_and_shows_state():
    state = TrayState(running=True, port=4242, icon="active", saved_tokens_today=12345, saved_usd_today=0.0512)
    _, items, _ = _menu(state)
    assert not items[0].enabled
    assert items[0].text == "scalpel active on :4242 - saved 12,345 tokens ($0.05) today"
    state.message = "tier failed: boom"
    assert items[0].text == "tier failed: boom"


def test_pause_resume_is_the_default_and_follows_state(pystray_dummy):
    state = TrayState(running=True, port=1)
    icon, items, emitted = _menu(state, pystray_dummy.Icon)
    default = [i for i in items if i.default]
    assert len(default) == 1 and default[0].text == "Pause"
    state.paused = True
    assert default[0].text == "Resume"
    icon()  # a click on the icon runs the default item
    assert emitted == ["toggle_pause"]
    state.running = False
    assert not default[0].enabled


def test_checkboxes_and_radios_follow_state():
    state = TrayState(running=True, tier=1, policy="payback", tool_filter=True, autopilot=True)
    _, items, _ = _menu(state)
    by_text = {i.text: i for i in items}
    assert by_text["Tier 1 (safe cuts)"].checked and by_text["Tier 1 (safe cuts)"].radio
    assert not by_text["Tier 2 (also stale output)"].checked
    assert by_text["Policy: payback"].checked and not by_text["Policy: cold cache only"].checked
    assert by_text["Tool filter"].checked and not by_text["Tool filter"].radio
    assert by_text["On (autopilot at login)"].checked
    state.tier, state.autopilot = 2, False
    assert by_text["Tier 2 (also stale output)"].checked and not by_text["On (autopilot at login)"].checked


def test_tooltip_gives_todays_savings():
    s = TrayState(running=True, saved_tokens_today=2_500_000, saved_usd_today=1.234, requests_today=7)
    assert s.tooltip() == "scalpel-desktop (active): saved 2,500,000 tokens ($1.23) today, 7 requests"
    assert TrayState().tooltip() == "scalpel-desktop: proxy off"


def test_the_tooltip_gives_todays_miss_cost_only_when_there_were_misses():
    base = dict(running=True, saved_tokens_today=1200, saved_usd_today=0.05, requests_today=7)
    none = TrayState(**base, misses_today=0, miss_usd_today=0.0)
    assert "miss" not in none.tooltip()
    assert TrayState(**base, misses_today=None, miss_usd_today=None).tooltip() == none.tooltip()  # unknown: quiet
    some = TrayState(**base, misses_today=3, miss_usd_today=0.4249)
    assert some.tooltip() == none.tooltip() + "; misses today $0.42"
    assert TrayState(**base, misses_today=1, miss_usd_today=0.0031).tooltip().endswith("; misses today $0.0031")
    assert len(some.tooltip()) <= 127  # Windows keeps 127 characters of a tray tooltip
    assert "miss" not in TrayState(misses_today=3, miss_usd_today=0.42).tooltip()  # proxy off: nothing of today
    some.problems = [("recording off", "why")]
    assert some.tooltip().endswith("; misses today $0.42; DEGRADED: recording off")


def test_a_degraded_proxy_gets_a_menu_line_and_says_so_in_the_tooltip():
    state = TrayState(running=True, port=4242, icon="error", saved_tokens_today=None, saved_usd_today=None,
                      requests_today=None, problems=[("recording off", "why"), ("surgery off", "why")])
    _, items, _ = _menu(state)
    line = items[1]
    assert not line.enabled and line.visible
    assert line.text == "Degraded: recording off, surgery off (scalpel doctor)"
    assert state.tooltip() == ("scalpel-desktop (active): saved unknown today, unknown requests; "
                               "DEGRADED: recording off, surgery off")
    assert "saved unknown today" in state.status_line()
    state.problems = []
    assert not line.visible and "DEGRADED" not in state.tooltip()
