"""The Claude Code hook inputs captured from 2.1.332 (tests/service/fixtures/README.md), their
paths rewritten to a test's HOME, where ``project`` (tests/service/conftest.py) makes the files exist."""

from __future__ import annotations

import json
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures"
NOTES = "Project notes\n=============\nTODO: fix the greeting\nThe app prints a greeting.\n"


def fixture(name: str, home: Path) -> dict:
    text = (FIXTURES / name).read_text().replace("/home/user", str(home))
    return json.loads(text)
