"""The one place that wires the proxy, the pipeline and the store together.

Frontends (``scalpel start``, the tray, the TUI through the control API) own
a ``Runtime``; nothing else builds a proxy. A runtime:

- holds the single-instance lock (``dirs().lock_file``, an OS file lock that
  dies with the process; its content says which pid and port hold it, so a
  second start can say where the running one is),
- creates the per-install control token (mode 0600) when missing,
- builds the pipeline (``assemble.default_stages`` with the ledger writer;
  surgery and the tool filter once the database allows: ``late_features``),
  starts the proxy thread, writes ``dirs().runtime_file``; stops in 5 s with
  every ledger row written or journaled (``runtime_stop``),
- restarts a proxy whose loop died, with backoff,
- answers health and status, applies settings live (validated, saved),
  runs control actions (built-ins plus those features register);
- says in its status what is off or failing and what to do (``degraded``,
  worded by ``runtime_health`` from the live parts' own state), so no
  frontend has to guess.

Settings given on the command line or by the environment (``overrides``)
win over the config file for this run and are never saved.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable

from scalpel_desktop import __version__, clock
from scalpel_desktop.accounting.prices import PriceTable
from scalpel_desktop.config import KEYS, Config, ConfigError, Settings, write_json_atomic
from scalpel_desktop.control_client import runtime_info
from scalpel_desktop.errors import ActionError, ProxyError
from scalpel_desktop.paths import dirs
from scalpel_desktop.pipeline import assemble
from scalpel_desktop.pipeline.chain import Chain
from scalpel_desktop.private_files import tighten_home
from scalpel_desktop.proxy.forward import ProxyOptions
from scalpel_desktop.proxy.server import ProxyServer, build_app
from scalpel_desktop.proxy import after_answer, diagnostics, keeper, memtrace
from scalpel_desktop.proxy.trim import Trimmer, limit_arenas
from scalpel_desktop.runtime_health import HealthFacts, SpillMeter, degraded_states
from scalpel_desktop.runtime_state import InstanceLock, Stats, ensure_token, read_holder
from scalpel_desktop.runtime_stop import STOP_TIMEOUT_S, close_in_time, keep_rows
from scalpel_desktop.pipeline.late_features import LateFeatures
from scalpel_desktop.store.ledger import LedgerWriter
from scalpel_desktop.store.resume_points import ledger_whole, mark_clean_stop
from scalpel_desktop.store.ledger_queries import today_savings_or_unknown

log = logging.getLogger("scalpel.runtime")

Action = Callable[[dict], dict]

BACKOFF_START_S = 0.5
BACKOFF_MAX_S = 30.0
HEALTHY_AFTER_S = 60.0  # running this long resets the backoff


class AlreadyRunning(ProxyError):
    title = "Already running"

    def __init__(self, pid: int | None, port: int | None):
        self.pid, self.port = pid, port
        where = f" (pid {pid}, port {port}, http://127.0.0.1:{port})" if pid else ""
        super().__init__(f"scalpel is already running{where}; stop it with `scalpel stop`")


class Runtime:
    def __init__(self, config: Config | None = None, overrides: dict[str, Any] | None = None, *, port: int | None = None):
        """``port`` beats every setting; 0 binds any free port (tests, benchmarks)."""
        self._port_arg = port
        self.config = config if config is not None else Config.load()
        self.settings = Settings(self.config, overrides)  # what the stages read
        self.overrides = self.settings.overrides
        self.stats = Stats()
        self.diagnosis = diagnostics.Diagnosis(lambda: self.setting("cache_diagnostics"))  # (proxy/diagnostics.py)
        self._actions: dict[str, Action] = {}
        self._settings_lock = threading.Lock()
        self._state_lock = threading.Lock()
        self._lock = InstanceLock(dirs().lock_file)
        self._server = None
        self._ledger = None
        self._pipeline: Chain | None = None
        self.prices: PriceTable | None = None
        self._executor: ThreadPoolExecutor | None = None
        self._observer: ThreadPoolExecutor | None = None
        self._completer: Any = None
        self._token = ""
        self.state = "stopped"  # stopped | running | paused | error
        self.port: int | None = None
        self.started_at: float | None = None
        self.restarts = 0
        self.last_crash = ""
        self._stop_requested = threading.Event()
        self._hurry = threading.Event()  # a second Ctrl-C / SIGTERM while stopping
        self._features: LateFeatures | None = None  # surgery and the tool filter, on their way
        self._stopped = threading.Event()
        self._stopped.set()
        self._stop_lock = threading.Lock()
        self._restart_timer: threading.Timer | None = None
        self._backoff = BACKOFF_START_S
        self._server_started = 0.0
        self._features_error: str | None = None  # why surgery and the tool filter were left out
        self._spill_meter = SpillMeter(dirs().spill)
        for name, fn in (("settings", self.set_settings), ("pause", self._pause), ("resume", self._resume),
                         ("stop", self._stop_action)):
            self._actions[name] = fn

    # -- settings ------------------------------------------------------------
    def setting(self, name: str) -> Any:
        return self.settings.get(name)

    def set_settings(self, values: dict[str, Any]) -> dict[str, Any]:
        """Validate every value first (all or nothing), then apply live and save."""
        if not isinstance(values, dict) or not values:
            raise ConfigError("settings: expected an object of {key: value}")
        parsed = {}
        for k, v in values.items():
            key = KEYS.get(k)
            if key is None:
                raise ConfigError(f"unknown setting {k!r}; known: {', '.join(sorted(KEYS))}")
            parsed[k] = key.parse(v)
        with self._settings_lock:
            for k, v in parsed.items():
                self.config.set(k, v)
                self.overrides.pop(k, None)  # an explicit change beats a start-up flag
            self.config.save()
        restart = [k for k in parsed if k == "port" and self.port is not None and parsed[k] != self.port]
        return {"ok": True, "settings": parsed, "restart_needed": restart}

    @property
    def pipeline(self) -> Chain | None:
        """The running chain (None before ``start``): actions ask it for a stage by name."""
        return self._pipeline

    def register_action(self, name: str, fn: Action) -> None:
        self._actions[name] = fn

    def run_action(self, name: str, payload: dict) -> dict:
        fn = self._actions.get(name)
        if fn is None:
            raise ActionError(f"unknown action {name!r}; known: {', '.join(sorted(self._actions))}", status=404,
                              title="Unknown action")
        result = fn(payload)
        return result if isinstance(result, dict) else {"ok": True, "result": result}

    def _pause(self, payload: dict) -> dict:
        self.set_settings({"paused": True})
        return {"ok": True, "paused": True}

    def _resume(self, payload: dict) -> dict:
        self.set_settings({"paused": False})
        return {"ok": True, "paused": False}

    def _stop_action(self, payload: dict) -> dict:
        # Answer first, then stop from another thread (never from the proxy's own loop).
        threading.Timer(0.05, self.stop).start()
        return {"ok": True, "stopping": True, "pid": os.getpid()}

    def token(self) -> str:
        return self._token

    # -- life cycle ----------------------------------------------------------
    def start(self) -> "Runtime":
        tighten_home()  # what an older version left 0755/0644 becomes 0700/0600
        if not self._lock.acquire():
            raise AlreadyRunning(*read_holder())
        try:
            self._token = ensure_token()
            self._build_pipeline()
            self._stop_requested.clear()
            self._hurry.clear()
            self._stopped.clear()
            self._start_server()
        except BaseException:
            self._teardown()
            raise
        info = {"pid": os.getpid(), "port": self.port, "started_at": self.started_at, "version": __version__}
        self._lock.describe(info)
        write_json_atomic(dirs().runtime_file, info, mode=0o600)
        log.info("scalpel proxy listening on http://127.0.0.1:%s", self.port)
        return self

    def _build_pipeline(self) -> None:
        self._ledger = LedgerWriter(dirs().database)
        if self.prices is None:
            self.prices = PriceTable.load()  # once per runtime, passed down
        self._features_error = None
        self._features = LateFeatures(on_error=self._note_features_off, close=assemble.close_stages)
        stages = assemble.default_stages(self.settings, ledger=self._ledger, prices=self.prices,
                                         on_features_off=self._note_features_off, features_later=self._features)
        self._pipeline = chain = Chain(stages, paused=lambda: bool(self.setting("paused")))
        self._features.deliver_to(lambda late: assemble.install_features(chain, late))  # (then says they are on)
        limit_arenas()  # before the pool's threads allocate: freed memory is not scattered over 8 arenas
        self._executor = ThreadPoolExecutor(max_workers=8, thread_name_prefix="scalpel-pipeline")
        self._observer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="scalpel-observe")
        self._completer = after_answer.completion_pool(chain)  # by conversation (proxy/completer.py)
        assemble.register_actions(self)
        keeper.install(self, chain, self._ledger)  # the cache keeper: last stage, and the ``keeper`` action
        memtrace.install_from_env(stages)  # SCALPEL_MEMTRACE=DIR only: a diagnosis (benchmarks/proxy_memory.py)

    def _note_features_off(self, why: str | None) -> None:  # (None: on now)
        self._features_error = why

    def _proxy_options(self):
        return ProxyOptions(
            upstream=lambda api: self.setting("openai_upstream" if api == "openai" else "anthropic_upstream"),
            body_limit=lambda: int(self.setting("body_limit_mb")) * 1024 * 1024,
            pipeline=self._pipeline, executor=self._executor, observer=self._observer, completer=self._completer,
            on_finished=self.stats.record, trimmer=Trimmer(), diagnosis=self.diagnosis,
            requests_first=getattr(self._completer, "gate", None))

    def _start_server(self) -> None:
        if self.port is not None:
            port = self.port
        elif self._port_arg is not None:
            port = self._port_arg
        else:
            port = int(self.setting("port"))
        server = ProxyServer(lambda: build_app(self._proxy_options(), self), port, on_exit=self._on_server_exit)
        server.start()
        with self._state_lock:
            self._server = server
            self.port = server.port
            if self.started_at is None:
                self.started_at = clock.now()
            self._server_started = time.monotonic()
            self.state = "running"

    def _on_server_exit(self, crash: BaseException | None) -> None:
        if self._stop_requested.is_set() or crash is None:
            return
        with self._state_lock:
            self.state = "error"
            self.last_crash = f"{type(crash).__name__}: {crash}"
            if time.monotonic() - self._server_started > HEALTHY_AFTER_S:
                self._backoff = BACKOFF_START_S
            delay = self._backoff
            self._backoff = min(self._backoff * 2, BACKOFF_MAX_S)
        log.error("proxy crashed (%s); restarting in %.1f s", self.last_crash, delay)
        timer = threading.Timer(delay, self._restart)
        timer.daemon = True
        self._restart_timer = timer
        timer.start()

    def _restart(self) -> None:
        if self._stop_requested.is_set():
            return
        try:
            self._start_server()
            self.restarts += 1
            log.warning("proxy restarted on port %s", self.port)
        except Exception as e:  # noqa: BLE001
            self._on_server_exit(e)

    def stop(self, timeout: float = STOP_TIMEOUT_S) -> bool:
        """Stop serving, keep every ledger row (written, or journaled), release the lock, all within
        ``timeout`` (``runtime_stop.py``); True when the server ended in time."""
        with self._stop_lock:  # the control API, a signal and the tray may all ask at once
            if self._stopped.is_set():
                return True
            self._stop_requested.set()
            deadline = time.monotonic() + timeout
            ok = True
            if self._restart_timer is not None:
                self._restart_timer.cancel()
            server = self._server
            if server is not None:
                ok = server.stop(timeout=max(0.1, deadline - time.monotonic()))
            self._teardown(deadline)
            return ok

    def hurry(self) -> None:
        """A second Ctrl-C or SIGTERM while stopping: no more waiting on analyses or the database (rows kept)."""
        self._hurry.set()
        for part in (self._pipeline, self._ledger):
            getattr(part, "hurry", lambda: None)()

    def _teardown(self, deadline: float | None = None) -> None:
        deadline = deadline or time.monotonic() + STOP_TIMEOUT_S
        if self._features is not None:
            self._features.stop()
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None
        # Rows before analyses: the answered requests' rows, then the ledger, then the stages (runtime_stop.py).
        keep_rows(self._pipeline, (self._observer, self._completer), deadline, self._hurry)
        self._observer = self._completer = None
        if self._ledger is not None:
            try:
                self._ledger.close(timeout=max(0.1, deadline - time.monotonic()))
                if ledger_whole(self._ledger):  # the next proxy may trust the ledger (surgery/resume.py)
                    mark_clean_stop(clock.now())
            except Exception:  # noqa: BLE001
                log.exception("closing the ledger failed")
            self._ledger = None
        if self._pipeline is not None:
            close_in_time(assemble.close_stages, list(self._pipeline.stages), deadline=deadline)
        try:
            info = runtime_info()
            if info and info.get("pid") == os.getpid():
                dirs().runtime_file.unlink()
        except OSError:
            pass
        self._lock.release()
        with self._state_lock:
            self.state = "stopped"
            self._server = None
        self._stopped.set()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until stopped (by ``stop()``, the control API, ...); True when stopped."""
        return self._stopped.wait(timeout)

    @property
    def running(self) -> bool:
        return not self._stopped.is_set()

    # -- answers -------------------------------------------------------------
    def health(self) -> dict[str, Any]:
        return {"ok": self.state == "running", "version": __version__, "pid": os.getpid(), "port": self.port}

    def status(self) -> dict[str, Any]:
        state = self.state
        paused = bool(self.setting("paused"))
        if state == "running" and paused:
            state = "paused"
        now = clock.now()
        snap: dict[str, Any] = {
            "running": self.running,
            "state": state,
            "version": __version__,
            "pid": os.getpid(),
            "port": self.port,
            "started_at": self.started_at,
            "uptime_s": round(now - self.started_at, 1) if self.started_at and self.running else 0,
            "restarts": self.restarts,
            "last_crash": self.last_crash,
            "paused": paused,
            "tier": self.setting("tier"),
            "policy": self.setting("policy"),
            "tool_filter": self.setting("tool_filter"),
            "anthropic_upstream": _no_userinfo(self.setting("anthropic_upstream")),
            "openai_upstream": _no_userinfo(self.setting("openai_upstream")),
            "cache_diagnostics": self.diagnosis.status(),  # on, and the upstreams that refused it
        }
        snap.update(self.stats.snapshot())
        ledger = self._ledger
        if ledger is not None and hasattr(ledger, "enabled"):
            snap["recording"] = bool(ledger.enabled)
        # "Today" from the ledger, since local midnight (the counters above restart with the process);
        # None (unknown), never 0, when the ledger is there and cannot be read.
        db = Path(getattr(ledger, "path", None) or dirs().database)
        today, today_error = today_savings_or_unknown(db, now)
        snap["requests_today"], snap["saved_tokens_today"], snap["saved_usd_today"] = (
            (today.requests, today.tokens, today.usd) if today is not None else (None, None, None))
        snap["today_error"] = today_error
        chain = self._pipeline
        # Whether surgery / the tool filter act on requests now (degraded says why not).
        live = chain is not None and not paused
        snap["surgery_active"] = live and chain.get("surgery") is not None
        snap["tool_filter_active"] = live and bool(snap["tool_filter"]) and chain.get("tool_filter") is not None
        snap["order_waits"] = chain.order_waits.snapshot() if chain is not None else None
        snap["spill_bytes"], snap["spill_max_mb"] = self._spill_meter.bytes(), int(self.setting("spill_max_mb"))
        snap["degraded"] = [d.as_dict() for d in degraded_states(self._health_facts(snap, db, now))]
        return snap

    def _health_facts(self, snap: dict[str, Any], db: Path, now: float) -> HealthFacts:
        """The facts ``runtime_health`` words the degraded states from, read now from the live parts."""
        ledger, chain = self._ledger, self._pipeline
        surgery = chain.get("surgery") if chain is not None else None
        return HealthFacts(
            ledger_path=db, spill_dir=dirs().spill, state=self.state, last_crash=self.last_crash,
            paused=snap["paused"], policy=str(snap["policy"]), tool_filter_asked=bool(snap["tool_filter"]),
            recording=snap.get("recording"), recording_error=getattr(ledger, "last_error", None),
            ledger_busy_since=getattr(ledger, "busy_since", None), ledger_pending=int(getattr(ledger, "pending", 0)),
            ledger_journaled=int(getattr(ledger, "journaled", 0)),
            features_error=self._features_error, surgery_running=chain is None or surgery is not None,
            tool_filter_running=chain is None or chain.get("tool_filter") is not None,
            today_error=snap["today_error"],
            spill_problem=getattr(getattr(surgery, "surgeon", None), "spill_problem", None),
            spill_bytes=snap["spill_bytes"], spill_max_mb=snap["spill_max_mb"],
            order_waits=snap["order_waits"], order_wait_s=chain.order_wait_s if chain is not None else 0.0, now=now)


def _no_userinfo(url: str) -> str:
    """An upstream URL for display: any user:password@ part removed."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    netloc, slash, path = rest.partition("/")
    netloc = netloc.rsplit("@", 1)[-1]
    return f"{scheme}://{netloc}{slash}{path}"
