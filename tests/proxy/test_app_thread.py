"""The one aiohttp app-in-a-thread runner: binds, serves, stops, maps bind errors, reports crashes."""

from __future__ import annotations

import socket
import threading
import urllib.request

import pytest
from aiohttp import web

from scalpel_desktop.proxy.app_thread import AppThread


def _hello_app() -> web.Application:
    async def hello(request: web.Request) -> web.Response:
        return web.Response(text=f"hello from {threading.current_thread().name}")

    app = web.Application()
    app.router.add_get("/", hello)
    return app


def test_serves_from_its_own_thread_on_a_free_port_and_stops():
    t = AppThread(_hello_app, 0, name="test-app").start()
    try:
        assert t.port != 0 and t.running and t.url == f"http://127.0.0.1:{t.port}"
        with urllib.request.urlopen(t.url + "/", timeout=10) as r:
            assert r.read() == b"hello from test-app"
    finally:
        assert t.stop(timeout=10)
    assert not t.running and t.wait(0)
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", t.port), timeout=2).close()


def test_a_taken_port_raises_the_mapped_error_or_the_raw_one():
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    port = holder.getsockname()[1]

    class Taken(Exception):
        pass

    try:
        with pytest.raises(Taken):
            AppThread(_hello_app, port, bind_error=lambda e: Taken(str(e))).start()
        with pytest.raises(OSError):
            AppThread(_hello_app, port, bind_error=lambda e: None).start()
        with pytest.raises(OSError):
            AppThread(_hello_app, port).start()
    finally:
        holder.close()


def test_a_loop_that_ends_unasked_is_reported_as_a_crash_and_a_stop_is_not():
    exits: list[BaseException | None] = []
    done = threading.Event()

    def on_exit(crash):
        exits.append(crash)
        done.set()

    t = AppThread(_hello_app, 0, label="the test app", on_exit=on_exit).start()
    t.crash_for_test()
    assert done.wait(10)
    assert isinstance(exits[0], RuntimeError) and "the test app's event loop stopped unexpectedly" in str(exits[0])

    done.clear()
    t = AppThread(_hello_app, 0, on_exit=on_exit).start()
    assert t.stop(timeout=10) and done.wait(10)
    assert exits[1] is None


def test_a_start_error_from_the_app_factory_reaches_start():
    def broken() -> web.Application:
        raise ValueError("no app today")

    with pytest.raises(ValueError, match="no app today"):
        AppThread(broken, 0).start()


def test_stop_from_its_own_thread_is_refused():
    holder: dict = {}

    def app() -> web.Application:
        async def stop_self(request):
            try:
                holder["t"].stop()
            except RuntimeError as e:
                return web.Response(text=str(e))
            return web.Response(text="stopped?")

        a = web.Application()
        a.router.add_get("/", stop_self)
        return a

    t = AppThread(app, 0, label="the test app")
    holder["t"] = t
    t.start()
    try:
        with urllib.request.urlopen(t.url + "/", timeout=10) as r:
            assert r.read() == b"stop() called from the test app's own thread"
    finally:
        t.stop()
