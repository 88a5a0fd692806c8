"""The house's layering, read from the code (issue 9): no import cycle, no upward import, ledger SQL in store/.

The rules are the tables in tests/support/import_graph.py. Each rule is
checked twice: over scalpel_desktop/ itself, and over a tiny package planted
in tmp_path that breaks it once, so a rule that stopped matching anything
fails here instead of passing quietly.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.support import REPO
from tests.support import import_graph as ig

RULES = {r.name: r for r in ig.IMPORT_RULES}


@pytest.fixture(scope="module")
def house() -> ig.Package:
    return ig.read_package(REPO / "scalpel_desktop")


def _report(title: str, lines: list[str]) -> str:
    return f"{title}:\n  " + "\n  ".join(lines)


# ---------------------------------------------------------------- the house


def test_no_import_cycle_between_files(house):
    found = ig.describe_cycles(house)
    assert not found, _report("import cycles (each loop's files)", found)


def test_core_imports_nothing_above_it(house):
    found = ig.import_violations(house, RULES["core imports nothing above it"])
    assert not found, _report("core modules importing the app, the server or a frontend", found)


def test_nothing_shipped_imports_the_emulator(house):
    found = ig.import_violations(house, RULES["shipped code never imports the emulator"])
    assert not found, _report("shipped code importing the emulator", found)


def test_tray_imports_neither_cli_nor_tui(house):
    found = ig.import_violations(house, RULES["tray never imports cli or tui"])
    assert not found, _report("tray importing another frontend", found)


def test_tui_imports_neither_cli_nor_tray(house):
    found = ig.import_violations(house, RULES["tui never imports cli or tray"])
    assert not found, _report("tui importing another frontend", found)


def test_service_imports_no_frontend(house):
    found = ig.import_violations(house, RULES["service never imports a frontend"])
    assert not found, _report("service importing a frontend", found)


def test_wire_imports_no_other_core_package(house):
    found = ig.import_violations(house, RULES["wire imports no other core package"])
    assert not found, _report("wire importing the rest of the core", found)


def test_ledger_sql_lives_in_store(house):
    found = ig.sql_violations(house)
    assert not found, _report(f"SQL over {', '.join(ig.SQL_TABLES)} outside {', '.join(ig.SQL_HOME)}/", found)


MODULE_MAX_LINES = 400  # house rule: small modules with one job each


def modules_over(root: Path, limit: int = MODULE_MAX_LINES) -> list[str]:
    """Every .py file under ``root`` longer than ``limit`` lines, with its length."""
    return sorted(f"{p.relative_to(root)}: {n} lines" for p in root.rglob("*.py")
                  if (n := len(p.read_text(encoding="utf-8").splitlines())) > limit)


def test_no_module_is_over_400_lines():
    assert modules_over(REPO / "scalpel_desktop") == []


def test_a_planted_long_module_is_reported(tmp_path):
    (tmp_path / "short.py").write_text("x = 1\n" * MODULE_MAX_LINES)
    (tmp_path / "long.py").write_text("x = 1\n" * (MODULE_MAX_LINES + 1))
    assert modules_over(tmp_path) == [f"long.py: {MODULE_MAX_LINES + 1} lines"]


def test_the_reader_sees_the_whole_house(house):
    """Guards the checks above against reading nothing: the package's own known edges are found."""
    edges = house.edges()
    assert "cli.cmd_emulator" in house.files and "wire.view" in house.files
    assert any(t.startswith("accounting.") for t in edges["bench.replay"])
    assert any(i.importer == "proxy.server" and i.top == "aiohttp" for i in house.imports)


# ---------------------------------------------------------------- planted violations


def plant(tmp_path: Path, files: dict[str, str]) -> ig.Package:
    """Write a package named like the real one (so the rule tables apply) and read it."""
    root = tmp_path / ig.PACKAGE
    for rel, text in {"__init__.py": "", **files}.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        for parent in path.relative_to(root).parents:
            init = root / parent / "__init__.py"
            if not init.exists():
                init.write_text("")
        path.write_text(textwrap.dedent(text))
    return ig.read_package(root)


CLEAN = {
    "clock.py": "import time\n",
    "wire/view.py": "from scalpel_desktop import clock\nimport orjson\n",
    "store/ledger.py": "Q = 'SELECT id FROM requests WHERE ts >= ?'\n",
    "proxy/server.py": "import aiohttp\nfrom scalpel_desktop.wire import view\n",
    "emulator/server.py": "import aiohttp\nfrom . import control\n",
    "emulator/control.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .server import App\n",
    "bench/replay.py": "from scalpel_desktop.emulator import server\n",
    "cli/cmd_emulator.py": "def run():\n    from scalpel_desktop.emulator.server import serve\n",
    "cli/cmd_log.py": "from scalpel_desktop.store import ledger\n",
    "tray/app.py": "from scalpel_desktop.store import ledger\n",
    "tui/app.py": "import textual\nfrom ..store import ledger\n",
    "accounting/report.py": '"""Reads SELECT ... FROM requests through the store."""\nNOTE = "update the cuts later"\n',
}


def test_a_clean_planted_house_passes_every_rule(tmp_path):
    pkg = plant(tmp_path, CLEAN)
    assert ig.describe_cycles(pkg) == []
    for rule in ig.IMPORT_RULES:
        assert ig.import_violations(pkg, rule) == [], rule.name
    assert ig.sql_violations(pkg) == []


def test_planted_cycle_is_reported_with_its_files(tmp_path):
    pkg = plant(tmp_path, {
        **CLEAN,
        "service/base.py": "def choose():\n    from scalpel_desktop.service.systemd import Systemd\n",
        "service/systemd.py": "from .base import Backend\n",
        "wire/a.py": "from . import b\n",
        "wire/b.py": "from . import c\n",
        "wire/c.py": "import scalpel_desktop.wire.a\n",
    })
    found = ig.cycles(pkg)
    assert [f"{ig.PACKAGE}/service/base.py", f"{ig.PACKAGE}/service/systemd.py"] in found
    assert [f"{ig.PACKAGE}/wire/a.py", f"{ig.PACKAGE}/wire/b.py", f"{ig.PACKAGE}/wire/c.py"] in found
    assert len(found) == 2
    text = "\n".join(ig.describe_cycles(pkg))
    assert "service/base.py -> scalpel_desktop/service/systemd.py -> scalpel_desktop/service/base.py" in text


def test_type_checking_imports_make_no_cycle_but_their_else_branch_does(tmp_path):
    pkg = plant(tmp_path, {
        "a.py": "import typing\nfrom . import b\n",
        "b.py": "import typing\nif typing.TYPE_CHECKING:\n    from . import a\nelse:\n    from . import c\n",
        "c.py": "from scalpel_desktop import b\n",
    })
    assert ig.cycles(pkg) == [[f"{ig.PACKAGE}/b.py", f"{ig.PACKAGE}/c.py"]]


@pytest.mark.parametrize("importer, text, target", [
    ("wire/usage_tap.py", "from scalpel_desktop.proxy import control\n", "scalpel_desktop.proxy.control"),
    ("tools/actions.py", ("def f():\n    try:\n        from ..proxy.control import ActionError\n"
                         "    except ImportError:\n        pass\n"), "scalpel_desktop.proxy.control"),
    ("surgery/x.py", "import aiohttp.web\n", "aiohttp.web"),
    ("accounting/x.py", "from textual.app import App\n", "textual.app"),
    ("store/x.py", "import pystray\n", "pystray"),
    ("config.py", "from scalpel_desktop import runtime\n", "scalpel_desktop.runtime"),
    ("paths.py", "from .tui import app\n", "scalpel_desktop.tui.app"),
    ("errors.py", "from scalpel_desktop.cli import CliError\n", "scalpel_desktop.cli"),
    ("exchange.py", "from scalpel_desktop.pipeline.seam import Stage\n", "scalpel_desktop.pipeline"),
])
def test_planted_upward_import_from_the_core_is_reported(tmp_path, importer, text, target):
    pkg = plant(tmp_path, {
        **CLEAN, importer: text,
        "runtime.py": "", "tui/app.py": "", "cli/__init__.py": "class CliError(Exception): pass\n",
        "pipeline/seam.py": "", "proxy/control.py": "",
    })
    found = ig.import_violations(pkg, RULES["core imports nothing above it"])
    assert len(found) == 1 and found[0].startswith(f"{ig.PACKAGE}/{importer}:") and target in found[0], found


def test_planted_emulator_import_in_shipped_code_is_reported(tmp_path):
    pkg = plant(tmp_path, {
        **CLEAN,
        "pipeline/surgery_support.py": "def check(body):\n    from scalpel_desktop.emulator.validate import validate\n",
        "emulator/validate.py": "",
    })
    found = ig.import_violations(pkg, RULES["shipped code never imports the emulator"])
    assert found == [f"{ig.PACKAGE}/pipeline/surgery_support.py:2: imports scalpel_desktop.emulator.validate"]


def test_the_emulator_exemption_covers_one_cli_command_only(tmp_path):
    pkg = plant(tmp_path, {**CLEAN, "cli/cmd_start.py": "from scalpel_desktop import emulator\n"})
    found = ig.import_violations(pkg, RULES["shipped code never imports the emulator"])
    assert found == [f"{ig.PACKAGE}/cli/cmd_start.py:1: imports scalpel_desktop.emulator"]


@pytest.mark.parametrize("rule, importer, text", [
    ("tray never imports cli or tui", "tray/app.py", "def start():\n    from scalpel_desktop.cli import build_parser\n"),
    ("tray never imports cli or tui", "tray/menu.py", "from ..tui import app\n"),
    ("tui never imports cli or tray", "tui/app.py", "from scalpel_desktop.tray.icons import draw\n"),
    ("tui never imports cli or tray", "tui/screens/x.py", "from ...cli import cmd_log\n"),
])
def test_planted_frontend_importing_another_is_reported(tmp_path, rule, importer, text):
    pkg = plant(tmp_path, {**CLEAN, importer: text, "tray/icons.py": ""})
    found = ig.import_violations(pkg, RULES[rule])
    assert len(found) == 1 and found[0].startswith(f"{ig.PACKAGE}/{importer}:"), found


@pytest.mark.parametrize("rule, importer, text", [
    ("service never imports a frontend", "service/systemd.py", "def unit():\n    from scalpel_desktop.tray.icons import ICON\n"),
    ("service never imports a frontend", "service/doctor.py", "from ..cli import CliError\n"),
    ("wire imports no other core package", "wire/usage_tap.py", "from scalpel_desktop.accounting.usage import Usage\n"),
    ("wire imports no other core package", "wire/view.py", "from ..surgery import doom\n"),
])
def test_planted_wrong_way_import_below_the_frontends_is_reported(tmp_path, rule, importer, text):
    pkg = plant(tmp_path, {**CLEAN, importer: text, "tray/icons.py": "", "cli/__init__.py": "",
                           "accounting/usage.py": "", "surgery/doom.py": ""})
    found = ig.import_violations(pkg, RULES[rule])
    assert len(found) == 1 and found[0].startswith(f"{ig.PACKAGE}/{importer}:"), found


@pytest.mark.parametrize("text, table", [
    ('Q = "SELECT COUNT(*) FROM requests WHERE ts >= ?"\n', "requests"),
    ("def f(db):\n    db.execute('insert or replace into cuts (a) values (?)')\n", "cuts"),
    ('Q = """\n    UPDATE requests\n    SET x = 1\n"""\n', "requests"),
    ('def f(cols):\n    return f"DELETE FROM cuts WHERE {cols}"\n', "cuts"),
    ('Q = "SELECT c.id FROM other o JOIN cuts c ON c.id = o.id"\n', "cuts"),
])
def test_planted_ledger_sql_outside_store_is_reported(tmp_path, text, table):
    pkg = plant(tmp_path, {**CLEAN, "tui/data.py": text})
    found = ig.sql_violations(pkg)
    assert len(found) == 1 and found[0].startswith(f"{ig.PACKAGE}/tui/data.py:") and repr(table) in found[0], found


def test_sql_over_other_tables_and_prose_is_not_ledger_sql(tmp_path):
    pkg = plant(tmp_path, {**CLEAN, "tools/store.py": (
        'Q = "SELECT name FROM tool_calls WHERE session = ?"\n'
        'R = "SELECT x FROM requests_archive"\n'
        'HELP = "requests from the cuts table"\n'
    )})
    assert ig.sql_violations(pkg) == []
