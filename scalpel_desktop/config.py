"""The user's settings: one JSON file, a typed schema, clear errors.

Every key has a type, a default (SPEC section 5's defaults for the surgery) and
what values are allowed. ``Config.set`` validates and names the key, the value
and what is allowed when it refuses. Unknown keys in the file are kept (a newer
version may have written them) but ignored.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Callable, Mapping
from typing import Any

from scalpel_desktop.atomicfile import write_atomic
from scalpel_desktop.errors import SettingError
from scalpel_desktop.paths import dirs


class ConfigError(SettingError):
    """A bad key or value; the message names the key, the value and what is allowed."""


@dataclass(frozen=True)
class Key:
    name: str
    default: Any
    kind: type
    help: str
    choices: tuple = ()
    minimum: float | None = None
    maximum: float | None = None
    check: Callable[[Any], bool] | None = None
    allowed: str = ""

    def describe_allowed(self) -> str:
        if self.allowed:
            return self.allowed
        if self.choices:
            return "one of " + ", ".join(str(c) for c in self.choices)
        if self.kind is bool:
            return "true or false"
        if self.kind in (int, float):
            lo = "" if self.minimum is None else f">= {self.minimum}"
            hi = "" if self.maximum is None else f"<= {self.maximum}"
            rng = " and ".join(x for x in (lo, hi) if x)
            return f"a {'whole ' if self.kind is int else ''}number{(' ' + rng) if rng else ''}"
        if self.kind is list:
            return "a comma-separated list or a JSON list of strings ('' or [] for none)"
        return "text"

    def parse(self, value: Any) -> Any:
        """Turn a CLI string (or a JSON value) into this key's type, or raise ConfigError."""
        try:
            v = _coerce(self.kind, value)
        except (ValueError, TypeError):
            raise ConfigError(
                f"{self.name}: {value!r} is not valid; allowed: {self.describe_allowed()}"
            ) from None
        bad = (
            (self.choices and v not in self.choices)
            or (self.minimum is not None and v < self.minimum)
            or (self.maximum is not None and v > self.maximum)
            or (self.check is not None and not self.check(v))
        )
        if bad:
            raise ConfigError(
                f"{self.name}: {value!r} is not valid; allowed: {self.describe_allowed()}"
            )
        return v


def _coerce(kind: type, value: Any) -> Any:
    if kind is bool:
        if isinstance(value, bool):
            return value
        s = str(value).strip().lower()
        if s in ("1", "true", "yes", "on"):
            return True
        if s in ("0", "false", "no", "off"):
            return False
        raise ValueError(value)
    if kind is int:
        if isinstance(value, bool):
            raise ValueError(value)
        if isinstance(value, float) and not value.is_integer():
            raise ValueError(value)
        return int(str(value).strip()) if isinstance(value, str) else int(value)
    if kind is float:
        if isinstance(value, bool):
            raise ValueError(value)
        return float(value)
    if kind is list:
        if isinstance(value, list):
            return [str(x) for x in value]
        text = str(value).strip()
        if text.startswith("["):
            # A JSON list (``'[]'``, ``'["/a", "/b"]'``): what ``config show`` prints and a user
            # pastes back. Split at commas it would be a folder named ``[]``.
            parsed = json.loads(text)  # a ValueError names the key and what is allowed
            if not isinstance(parsed, list) or not all(isinstance(x, str) for x in parsed):
                raise ValueError(value)
            return [x.strip() for x in parsed if x.strip()]
        return [x.strip() for x in text.split(",") if x.strip()]
    if kind is str:
        if not isinstance(value, str):
            raise TypeError(value)
        return value
    raise TypeError(kind)


def _is_url(v: str) -> bool:
    return v.startswith(("http://", "https://")) and len(v) > len("http://x")


KEYS: dict[str, Key] = {
    k.name: k
    for k in [
        Key("port", 4242, int, "Port the proxy listens on (127.0.0.1 only).", minimum=1, maximum=65535),
        Key("anthropic_upstream", "https://api.anthropic.com", str, "Where Anthropic API requests go.",
            check=_is_url, allowed="an http:// or https:// URL"),
        Key("openai_upstream", "https://api.openai.com", str, "Where /openai/... requests go (prefix stripped).",
            check=_is_url, allowed="an http:// or https:// URL"),
        Key("paused", False, bool, "Pass-through: forward everything unchanged."),
        Key("tier", 2, int, "1 = superseded reads, duplicates, failed commands; 2 = also dead snapshots and stale large results.",
            choices=(1, 2)),
        Key("policy", "death", str, "When to cut: cold (only when free), death (also a result that just died, on a "
            "warm cache, when it repays its pinned rewrite), payback (also any dead result when it repays), off.",
            choices=("cold", "death", "payback", "off")),
        Key("keep_recent", 3, int, "Never cut the most recent N tool results.", minimum=0, maximum=1000),
        Key("failed_age_messages", 10, int, "A failed result is dead once this many messages old.", minimum=1),
        Key("stale_min_tokens", 1000, int, "A stale large result has at least this many tokens.", minimum=1),
        Key("stale_age_messages", 20, int, "... and is more than this many messages old.", minimum=1),
        Key("min_cut_tokens", 200, int, "Never cut a result under this many tokens.", minimum=1),
        Key("batch_min_tokens", 2000, int, "Cold policy: cut only batches worth at least this many tokens.", minimum=0),
        Key("ttl_margin_s", 30, int, "A cache is called cold only this many seconds past its TTL.", minimum=0),
        Key("payback_turns_min", 5, int, "No longer used: the warm policies estimate the remaining turns from your "
            "own history (docs/economist.md).", minimum=1),
        Key("payback_turns_max", 50, int, "Warm policies: count a cut's saving over at most this many later requests.",
            minimum=1),
        Key("payback_factor", 2.0, float, "Warm policies: the saving must repay the rewrite this many times.",
            minimum=1.0),
        Key("risk_cap_pct", 1.0, float, "Warm policies: no conversation may stake more than its own savings plus "
            "this percent of what it has cost so far (docs/economist.md).", minimum=0.0),
        Key("keepalive", False, bool, "While Claude Code waits, keep the conversation's prompt cache warm with "
            "one-token requests when your own pauses say it pays, funded from the risk budget (docs/economist.md)."),
        Key("cut_mcp_results", False, bool, "Allow cutting MCP tool results (mcp__*)."),
        Key("exclude_dirs", [], list, "Never change conversations whose working directory is under one of these."),
        Key("spill_keep_days", 30, int, "Spill files older than this are removed by `scalpel spill gc`.", minimum=1),
        Key("spill_max_mb", 2048, int, "Size cap of the spill dir; gc removes the oldest first.", minimum=1),
        Key("spill_keep_live_hours", 24, int, "`scalpel spill gc` never removes (whatever its age limit or size "
            "cap, unless --force) a spill file the stubs of a conversation seen within its cache TTL plus this "
            "many hours point at: the model may still open it.", minimum=0, maximum=24 * 365),
        Key("tool_filter", False, bool, "Apply the tool removal list to new sessions."),
        Key("mcp_hint", "", str, "Task hint for the MCP router's ranking."),
        Key("mcp_max_tools", 15, int, "Tools the MCP router lists before a search.", minimum=1),
        Key("body_limit_mb", 64, int, "Request bodies above this stream through untouched.", minimum=1),
        Key("memo_mb", 32, int, "Memory the surgery stage may keep for recent conversations (bodies, parsed "
            "documents, views, layouts; estimated from each body's size and message count as in wire/held.py). "
            "0 = keep none (a known conversation's request is then analysed in full, or goes as what is "
            "kept of it allows, surgery/ghost.py).", minimum=0, maximum=4096),
        Key("parse_reuse_mb", 20, int, "Memory parse-reuse may keep for recent bodies (raw bytes, parsed messages, "
            "layouts; estimated from each body's size and message count as in wire/held.py). "
            "0 = parse every body in full.", minimum=0, maximum=4096),
        Key("write_wait_ms", 50, int, "How long a request may wait for the database or the spill dir (a pin, the "
            "cut log, a spill) before it goes out without what needed the write; the write is retried off the path.",
            minimum=1, maximum=5000),
        Key("cache_diagnostics", False, bool, "Ask the Claude API why a cache missed (its cache-diagnosis beta): "
            "Messages requests carry the beta and the conversation's previous answer id, and the provider's reason "
            "goes in the ledger beside scalpel's own. The provider keeps a fingerprint of each such request "
            "(hashes and token counts, no content) for a limited time (docs/proxy.md)."),
    ]
}


def setting(config_like: Any, name: str) -> Any:
    """One setting from a ``Config``, a plain mapping (the bench, tests) or None; a
    missing or null value is the key's default. Every stage reads settings this way."""
    default = KEYS[name].default
    if config_like is None:
        return default
    if isinstance(config_like, Mapping):
        value = config_like.get(name)
    else:
        getter = getattr(config_like, "get", None)
        if callable(getter):
            try:
                value = getter(name)
            except Exception:  # noqa: BLE001 - an object without this key: the default
                value = None
        else:
            value = getattr(config_like, name, None)
    return default if value is None else value


class Config:
    """The settings as stored in ``config.json``, with defaults filled in."""

    def __init__(self, values: dict[str, Any] | None = None, path: Path | None = None):
        self.path = path or dirs().config_file
        self._raw: dict[str, Any] = dict(values or {})

    @classmethod
    def load(cls, path: Path | None = None) -> "Config":
        path = path or dirs().config_file
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raw = {}
        except (OSError, ValueError) as e:
            raise ConfigError(f"{path}: cannot be read as JSON ({e})") from None
        if not isinstance(raw, dict):
            raise ConfigError(f"{path}: expected a JSON object")
        return cls(raw, path)

    def get(self, name: str) -> Any:
        key = KEYS.get(name)
        if key is None:
            raise ConfigError(f"unknown setting {name!r}; known: {', '.join(sorted(KEYS))}")
        if name in self._raw:
            try:
                return key.parse(self._raw[name])
            except ConfigError:
                return key.default
        return key.default

    def __getitem__(self, name: str) -> Any:
        return self.get(name)

    def as_dict(self) -> dict[str, Any]:
        return {name: self.get(name) for name in KEYS}

    def set(self, name: str, value: Any) -> Any:
        key = KEYS.get(name)
        if key is None:
            raise ConfigError(f"unknown setting {name!r}; known: {', '.join(sorted(KEYS))}")
        parsed = key.parse(value)
        self._raw[name] = parsed
        return parsed

    def save(self) -> None:
        write_json_atomic(self.path, self._raw)


class Settings:
    """The settings as every part reads them, in layers: this run's overrides (the
    command line, the environment; never saved) over the config file over the
    defaults. The runtime owns one and hands it to the stages, which read it live
    (``setting(settings, name)``), so a start-up flag counts for them too."""

    def __init__(self, config: Config, overrides: Mapping[str, Any] | None = None):
        self.config = config
        self.overrides: dict[str, Any] = {}
        for k, v in (overrides or {}).items():
            if k not in KEYS:
                raise ConfigError(f"unknown setting {k!r}")
            self.overrides[k] = KEYS[k].parse(v)

    def get(self, name: str) -> Any:
        if name in self.overrides:
            return self.overrides[name]
        return self.config.get(name)

    def __getitem__(self, name: str) -> Any:
        return self.get(name)

    def as_dict(self) -> dict[str, Any]:
        return {name: self.get(name) for name in KEYS}


def write_json_atomic(path: Path, data: Any, mode: int = 0o600) -> None:
    """Write JSON to ``path`` atomically (temp file + fsync + rename)."""
    write_atomic(path, (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode("utf-8"), mode=mode)
