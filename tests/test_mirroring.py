"""Tests mirror the package file by file (issue 9), or the module is exempted with a reason.

``scalpel_desktop/X/Y.py`` has ``tests/X/test_Y.py``; the exceptions live in
tests/mirroring_exemptions.txt. The checker (tests/support/mirroring.py) is
also run over planted trees, so each way of failing is shown to fail.
"""

from __future__ import annotations

from pathlib import Path

from tests.support import REPO, mirroring


def test_every_module_has_its_mirrored_test_or_a_reasoned_exemption():
    report = mirroring.check(REPO)
    problems = [f"no test file: {m}" for m in report.missing]
    problems += [f"stale exemption: {s}" for s in report.stale]
    problems += [f"bad exemption line: {s}" for s in report.malformed]
    assert report.ok, "tests/mirroring_exemptions.txt or a test file needs an edit:\n  " + "\n  ".join(problems)


def test_the_house_check_reads_the_real_tree():
    report = mirroring.check(REPO)
    assert "scalpel_desktop/__main__.py" in report.exempt
    assert all(reason for reason in report.exempt.values())


def plant(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


TREE = {
    "scalpel_desktop/__init__.py": '"""The package."""\n',
    "scalpel_desktop/config.py": "X = 1\n",
    "scalpel_desktop/wire/__init__.py": "",
    "scalpel_desktop/wire/view.py": "X = 1\n",
    "scalpel_desktop/tools/router/__init__.py": "from .rank import rank\n",
    "scalpel_desktop/tools/router/rank.py": "def rank(): ...\n",
    "tests/test_config.py": "",
    "tests/wire/test_view.py": "",
    "tests/tools/router/test_rank.py": "",
    "tests/mirroring_exemptions.txt": (
        "# path  reason\n\nscalpel_desktop/tools/router/__init__.py  re-exports rank; tested there\n"
    ),
}


def test_a_planted_tree_that_mirrors_passes(tmp_path):
    report = mirroring.check(plant(tmp_path, TREE))
    assert report.ok, report
    assert report.exempt == {"scalpel_desktop/tools/router/__init__.py": "re-exports rank; tested there"}


def test_planted_module_without_its_test_is_reported_with_the_expected_path(tmp_path):
    report = mirroring.check(plant(tmp_path, {**TREE, "scalpel_desktop/wire/usage.py": "X = 1\n",
                                              "scalpel_desktop/paths.py": "X = 1\n"}))
    assert report.missing == [
        "scalpel_desktop/paths.py  ->  tests/test_paths.py",
        "scalpel_desktop/wire/usage.py  ->  tests/wire/test_usage.py",
    ]
    assert not report.ok


def test_a_test_in_the_wrong_folder_does_not_count(tmp_path):
    tree = {**TREE, "scalpel_desktop/store/ledger.py": "X = 1\n", "tests/test_ledger.py": ""}
    assert mirroring.check(plant(tmp_path, tree)).missing == [
        "scalpel_desktop/store/ledger.py  ->  tests/store/test_ledger.py"]


def test_an_init_with_code_needs_a_test_or_an_exemption(tmp_path):
    tree = {**TREE, "tests/mirroring_exemptions.txt": ""}
    assert mirroring.check(plant(tmp_path, tree)).missing == [
        "scalpel_desktop/tools/router/__init__.py  ->  tests/tools/router/test___init__.py"]


def test_planted_exemption_for_a_gone_file_is_stale(tmp_path):
    tree = {**TREE, "tests/mirroring_exemptions.txt": TREE["tests/mirroring_exemptions.txt"]
            + "scalpel_desktop/surgery/cutlog.py  moved to store/\n"}
    report = mirroring.check(plant(tmp_path, tree))
    assert report.stale == ["line 4: scalpel_desktop/surgery/cutlog.py (no such file)"]
    assert not report.ok


def test_planted_exemption_for_a_module_that_has_its_test_now_is_stale(tmp_path):
    tree = {**TREE, "tests/mirroring_exemptions.txt": "scalpel_desktop/wire/view.py  too big to test\n"}
    report = mirroring.check(plant(tmp_path, tree))
    assert "line 1: scalpel_desktop/wire/view.py (has its test now: tests/wire/test_view.py)" in report.stale


def test_planted_exemption_for_a_docstring_only_init_is_stale(tmp_path):
    tree = {**TREE, "tests/mirroring_exemptions.txt": "scalpel_desktop/wire/__init__.py  package marker\n"}
    report = mirroring.check(plant(tmp_path, tree))
    assert "line 1: scalpel_desktop/wire/__init__.py (a docstring-only __init__.py needs no exemption)" in report.stale


def test_planted_exemption_without_a_reason_or_twice_is_malformed(tmp_path):
    tree = {**TREE, "tests/mirroring_exemptions.txt": (
        "scalpel_desktop/tools/router/__init__.py\n"
        "scalpel_desktop/config.py  thin\n"
        "scalpel_desktop/config.py  thin again\n"
    ), "tests/test_config.py": None}
    tree = {k: v for k, v in tree.items() if v is not None}
    report = mirroring.check(plant(tmp_path, tree))
    assert report.malformed == [
        "line 1: 'scalpel_desktop/tools/router/__init__.py' (want 'path  reason', two spaces apart)",
        "line 3: scalpel_desktop/config.py listed twice (first on line 2)",
    ]
    # the reason-less line exempts nothing
    assert "scalpel_desktop/tools/router/__init__.py  ->  tests/tools/router/test___init__.py" in report.missing
