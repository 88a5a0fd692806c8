"""Shared test helpers: prerequisites (corpus, Claude Code CLI, desktop tools), free ports."""

from __future__ import annotations

import os
import shutil
import socket
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared"
CORPUS = SHARED / "corpus"
IN_CI = os.environ.get("CI", "").lower() == "true"


def require(condition: bool, what: str) -> None:
    """Skip when a prerequisite is missing, but fail under CI=true."""
    if condition:
        return
    if IN_CI:
        pytest.fail(f"prerequisite missing under CI=true: {what}")
    pytest.skip(f"prerequisite missing: {what}")


def corpus_dir(*parts: str) -> Path:
    path = CORPUS.joinpath(*parts)
    require(path.exists(), f"../shared/corpus/{'/'.join(parts)}")
    return path


def claude_bin() -> str:
    path = os.environ.get("SCALPEL_TEST_CLAUDE") or shutil.which("claude")
    require(bool(path), "the Claude Code CLI (npm install -g @anthropic-ai/claude-code@2.1.332)")
    return str(path)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    """``scalpel ARGV`` in-process: its exit code and what it printed to stdout and stderr."""
    from scalpel_desktop.cli import main

    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err
