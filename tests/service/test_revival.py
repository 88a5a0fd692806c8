"""service/revival.py: one start however many hooks see the proxy down, and every way a revival ends.

The backend here is a recorder (its ``start`` only counts): these tests are about the claim and
the loop; a real proxy coming back is in tests/service/test_session_hook_backend.py."""

from __future__ import annotations

import time

from scalpel_desktop.service import revival
from scalpel_desktop.service.base import Outcome, ServiceResult
from tests.support import free_port


class RecordingBackend:
    name = "recording"

    def __init__(self, outcome: Outcome = Outcome(ServiceResult.ENABLED), starting: bool = True):
        self.outcome, self.starting, self.starts = outcome, starting, 0

    def start(self) -> Outcome:
        self.starts += 1
        return self.outcome

    def still_starting(self) -> bool:
        return self.starting


def test_a_claim_is_taken_once_until_it_goes_stale(isolated_home):
    now = time.time()
    assert revival.claim(now) is True
    assert revival.claim(now + 1) is False  # a start is under way: do not start another
    assert revival.claim(now + revival.CLAIM_S + 1) is True  # its owner died or gave up
    revival.release()
    assert revival.claim(now + 1) is True


def test_many_statuslines_at_once_ask_the_service_once(isolated_home):
    backend, port = RecordingBackend(), free_port()  # nothing will answer there
    assert [revival.revive(backend, port, wait_s=0) for _ in range(5)] == ["starting"] * 5
    assert backend.starts == 1


def test_a_failed_start_gives_the_claim_up_and_says_why(isolated_home):
    backend = RecordingBackend(Outcome(ServiceResult.FAILED, "Unit scalpel-desktop.service is masked."))
    port = free_port()
    assert revival.revive(backend, port, wait_s=0) == "failed: Unit scalpel-desktop.service is masked."
    assert revival.revive(backend, port, wait_s=0).startswith("failed: ") and backend.starts == 2


def test_a_proxy_that_exits_at_once_ends_the_wait_early(isolated_home):
    backend = RecordingBackend(starting=False)
    t = time.monotonic()
    result = revival.revive(backend, free_port(), wait_s=30)
    assert result == "failed: the recording service started a proxy that exited at once"
    assert time.monotonic() - t < 5 and revival.claim()  # not the 30 s limit, and the claim is free again


def test_a_hook_that_finds_a_start_under_way_waits_without_starting(isolated_home):
    revival.claim()  # another hook's start
    backend, wait_s = RecordingBackend(), 0.5
    t = time.monotonic()
    result = revival.revive(backend, free_port(), wait_s=wait_s)
    assert result == f"failed: the recording service did not answer within {wait_s:g} s"
    assert backend.starts == 0 and time.monotonic() - t >= wait_s


def test_an_answering_proxy_ends_the_revival_and_frees_the_claim(isolated_home):
    from scalpel_desktop.runtime import Runtime

    rt = Runtime(port=0).start()
    try:
        backend = RecordingBackend()
        revival.claim()
        assert revival.revive(backend, rt.port, wait_s=5) == "started" and backend.starts == 0
        assert revival.claim()
    finally:
        rt.stop()
