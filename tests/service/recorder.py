"""A service-manager runner that records commands instead of running them.

The backends take ``runner=``; every backend test hands them one of these, so
that no test ever reaches launchctl, systemctl or schtasks. ``fail_on`` makes
the command whose argv holds that word fail with ``failure`` as its stderr,
the way each manager reports a refusal.
"""

from __future__ import annotations

import subprocess


class Recorder:
    def __init__(self, fail_on: str | None = None, failure: str = "refused"):
        self.calls: list[list[str]] = []
        self.fail_on = fail_on
        self.failure = failure

    def __call__(self, argv):
        self.calls.append(list(argv))
        failed = self.fail_on is not None and self.fail_on in argv
        return subprocess.CompletedProcess(argv, 1 if failed else 0, "", self.failure if failed else "")
