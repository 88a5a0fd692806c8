"""Which package modules lack their mirrored test file, and which exemptions went stale.

The house habit (mitmproxy's test/filename_matching.py): tests mirror the
package file by file, ``scalpel_desktop/X/Y.py`` -> ``tests/X/test_Y.py`` and
``scalpel_desktop/Y.py`` -> ``tests/test_Y.py``. A module that needs no test of
its own is listed, with the reason, in one exemption file: one ``path  reason``
per line (two or more spaces, or a tab, between them; ``#`` starts a comment).

An ``__init__.py`` holding nothing but a docstring needs neither. An exemption
goes stale when its file is gone or has gained its test; a stale, duplicated
or reason-less line is reported like a missing test, so the list stays true.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class MirrorReport:
    missing: list[str] = field(default_factory=list)  # "module  ->  expected test"
    stale: list[str] = field(default_factory=list)  # "line N: path (why stale)"
    malformed: list[str] = field(default_factory=list)  # "line N: text (what is wrong)"
    exempt: dict[str, str] = field(default_factory=dict)  # path -> reason

    @property
    def ok(self) -> bool:
        return not (self.missing or self.stale or self.malformed)


def mirrored_test(module: Path, package_dir: Path, tests_dir: Path) -> Path:
    rel = module.relative_to(package_dir)
    return tests_dir.joinpath(*rel.parts[:-1], f"test_{rel.name}")


def is_trivial_init(path: Path) -> bool:
    """An ``__init__.py`` with no statement besides its docstring."""
    if path.name != "__init__.py":
        return False
    body = ast.parse(path.read_text(encoding="utf-8")).body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    return not body


_LINE = re.compile(r"^(\S+)(?:\s{2,}|\t+)(\S.*)$")


def read_exemptions(path: Path) -> tuple[dict[str, tuple[int, str]], list[str]]:
    """``{path: (line number, reason)}`` and the malformed lines."""
    entries: dict[str, tuple[int, str]] = {}
    malformed: list[str] = []
    if not path.exists():
        return entries, malformed
    for n, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        text = raw.strip()
        if not text or text.startswith("#"):
            continue
        m = _LINE.match(text)
        if not m:
            malformed.append(f"line {n}: {text!r} (want 'path  reason', two spaces apart)")
            continue
        name, reason = m.group(1), m.group(2).strip()
        if name in entries:
            malformed.append(f"line {n}: {name} listed twice (first on line {entries[name][0]})")
            continue
        entries[name] = (n, reason)
    return entries, malformed


def check(repo: Path, package: str = "scalpel_desktop", tests: str = "tests",
          exemptions: str = "tests/mirroring_exemptions.txt") -> MirrorReport:
    repo = Path(repo)
    package_dir, tests_dir = repo / package, repo / tests
    entries, malformed = read_exemptions(repo / exemptions)
    report = MirrorReport(malformed=malformed, exempt={k: v[1] for k, v in entries.items()})
    for module in sorted(package_dir.rglob("*.py")):
        if "__pycache__" in module.parts or is_trivial_init(module):
            continue
        rel = module.relative_to(repo).as_posix()
        test = mirrored_test(module, package_dir, tests_dir)
        if not test.exists() and rel not in entries:
            report.missing.append(f"{rel}  ->  {test.relative_to(repo).as_posix()}")
    for name, (n, _reason) in sorted(entries.items(), key=lambda kv: kv[1][0]):
        path = repo / name
        if not path.is_file():
            report.stale.append(f"line {n}: {name} (no such file)")
        elif path.suffix == ".py" and path.is_relative_to(package_dir) \
                and mirrored_test(path, package_dir, tests_dir).exists():
            test = mirrored_test(path, package_dir, tests_dir).relative_to(repo).as_posix()
            report.stale.append(f"line {n}: {name} (has its test now: {test})")
        elif not path.is_relative_to(package_dir) or path.suffix != ".py":
            report.stale.append(f"line {n}: {name} (not a module of {package}/)")
        elif is_trivial_init(path):
            report.stale.append(f"line {n}: {name} (a docstring-only __init__.py needs no exemption)")
    return report
