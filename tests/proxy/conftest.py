"""A real emulated upstream and a real proxy (the runtime) in front of it."""

from __future__ import annotations

import time

import pytest

from scalpel_desktop.config import Config
from scalpel_desktop.emulator.testing import running_emulator
from scalpel_desktop.runtime import Runtime

SENTINEL_KEY = "sk-ant-SENTINEL-KEY-0000"


class Proxy:
    def __init__(self, runtime: Runtime):
        self.runtime = runtime

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.runtime.port}"

    @property
    def openai_url(self) -> str:
        return self.url + "/openai/v1"


@pytest.fixture
def emu():
    with running_emulator() as e:
        yield e


@pytest.fixture
def proxy(emu):
    rt = Runtime(Config.load(), {"anthropic_upstream": emu.url, "openai_upstream": emu.url}, port=0).start()
    yield Proxy(rt)
    rt.stop()


class SentRecorder:
    """An httpx event hook: the exact bytes the SDK put on the wire, before the proxy saw them."""

    def __init__(self):
        self.requests = []

    def __call__(self, request):
        self.requests.append((request.method, request.url.raw_path.decode(), dict(request.headers), request.read()))

    @property
    def bodies(self) -> list[bytes]:
        return [r[3] for r in self.requests]


def wait_for(cond, timeout=10.0):
    """Poll ``cond`` until it holds or ``timeout`` seconds pass; its last answer."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.02)
    return cond()
