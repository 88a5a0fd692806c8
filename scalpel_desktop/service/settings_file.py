"""Safe edits to Claude Code's ``settings.json``.

Rules (SPEC section 8): every write is atomic (temp file, fsync, rename), a copy
of the file as it was goes to ``settings.json.scalpel-backup`` first, and a file
that does not parse is refused with a message naming the file and the parse
error -- scalpel never "repairs" a user's file.

Each feature (autopilot, hooks, statusline) records the values it replaced, so
that turning it off puts them back. On top of that the file as it was before
scalpel's first change (the *baseline*, kept as exact bytes under
``dirs().state``) is written back verbatim when, after a restore, the settings
are equal to it: undoing every change gives the file back byte for byte, and a
user's own edits in between are kept (then only the keys are restored).
"""

from __future__ import annotations

import base64
import json
import shutil
from pathlib import Path
from typing import Any, Callable

from scalpel_desktop.atomicfile import write_atomic
from scalpel_desktop.paths import claude_config_dir, dirs

_MISSING = object()

class SettingsError(Exception):
    """The settings file cannot be used (does not parse, not an object, unwritable)."""

def settings_path() -> Path:
    return claude_config_dir() / "settings.json"

def _records_path() -> Path:
    return dirs().state / "claude-settings-changes.json"

def parse_settings(raw: bytes, path: Path) -> dict:
    """Parse ``raw`` or raise SettingsError naming ``path`` and the error."""
    if not raw.strip():
        return {}
    try:
        doc = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise SettingsError(f"{path}: not UTF-8 text ({e}); scalpel leaves it untouched") from None
    except json.JSONDecodeError as e:
        raise SettingsError(
            f"{path}: does not parse as JSON ({e.msg} at line {e.lineno} column {e.colno}); "
            "scalpel leaves it untouched -- fix or move the file, then try again"
        ) from None
    if not isinstance(doc, dict):
        raise SettingsError(f"{path}: expected a JSON object at the top level, found {type(doc).__name__}; scalpel leaves it untouched")
    return doc

def serialize(doc: dict) -> bytes:
    """Claude Code's own layout: 2-space indent, UTF-8, trailing newline."""
    return (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode("utf-8")

def get_path(doc: dict, keys: tuple[str, ...], default: Any = None) -> Any:
    cur: Any = doc
    for k in keys:
        if not isinstance(cur, dict) or k not in cur:
            return default
        cur = cur[k]
    return cur

def _set_path(doc: dict, keys: tuple[str, ...], value: Any) -> None:
    cur = doc
    for k in keys[:-1]:
        nxt = cur.get(k)
        if not isinstance(nxt, dict):
            nxt = {}
            cur[k] = nxt
        cur = nxt
    if value is _MISSING:
        cur.pop(keys[-1], None)
    else:
        cur[keys[-1]] = value

class _Container:
    """A recorded previous value that scalpel replaced by an object to put its keys in."""

    __slots__ = ("value",)

    def __init__(self, value: Any):
        self.value = value

def object_at(doc: dict, key: str, replaced: dict[tuple[str, ...], Any]) -> dict:
    """The object at top-level ``key``, made one where none is. A value that was there but is
    not an object (``"env": null``) is recorded in ``replaced``, so that ``restore`` puts it back
    once what scalpel added is gone (and only then: an object the user has filled since stays)."""
    cur = doc.get(key, _MISSING)
    if isinstance(cur, dict):
        return cur
    if cur is not _MISSING:
        replaced.setdefault((key,), _Container(cur))
    made: dict = {}
    doc[key] = made
    return made

def _prune_empty(doc: dict, keys: tuple[str, ...], keep: dict | None = None) -> None:
    """Remove containers along ``keys`` left empty by a removal (innermost first), but one
    that was just as empty before scalpel's first change (``keep``: that file, when recorded)."""
    for depth in range(len(keys) - 1, 0, -1):
        parent = get_path(doc, keys[: depth - 1]) if depth > 1 else doc
        child = get_path(doc, keys[:depth])
        if keep is not None and get_path(keep, keys[:depth], _MISSING) in ({}, []):
            continue
        if isinstance(parent, dict) and isinstance(child, (dict, list)) and not child:
            parent.pop(keys[depth - 1], None)

class ClaudeSettings:
    """One settings file plus scalpel's record of what it changed there."""

    def __init__(self, path: Path | None = None, records_path: Path | None = None):
        self.path = Path(path or settings_path())
        self.records_path = Path(records_path or _records_path())

    # -- reading ---------------------------------------------------------
    def read_raw(self) -> bytes | None:
        try:
            return self.path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as e:
            raise SettingsError(f"{self.path}: cannot be read ({e.strerror})") from None

    def load(self) -> dict:
        raw = self.read_raw()
        return {} if raw is None else parse_settings(raw, self.path)

    def records(self) -> dict:
        try:
            data = json.loads(self.records_path.read_text(encoding="utf-8"))
            return data if isinstance(data, dict) else {}
        except (OSError, ValueError):
            return {}

    def feature_changes(self, feature: str) -> dict:
        return self.records().get("features", {}).get(feature, {})

    @property
    def backup_path(self) -> Path:
        return self.path.with_name(self.path.name + ".scalpel-backup")

    def remove_backup(self) -> bool:
        """Delete ``settings.json.scalpel-backup`` once no feature has a change left to restore; True when deleted."""
        if any(self.records().get("features", {}).values()):
            return False
        try:
            self.backup_path.unlink()
        except FileNotFoundError:
            return False
        except OSError as e:
            raise SettingsError(f"{self.backup_path}: cannot be removed ({e.strerror})") from None
        return True

    # -- writing ---------------------------------------------------------
    def _write_records(self, data: dict) -> None:
        from scalpel_desktop.config import write_json_atomic

        write_json_atomic(self.records_path, data)

    def _write_bytes(self, data: bytes | None, before: bytes | None) -> None:
        """Atomically replace the file (or delete it for None), backing up ``before``."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        backup = self.backup_path
        if before is not None:
            try:
                shutil.copy2(self.path, backup)
            except OSError as e:
                raise SettingsError(f"{backup}: cannot write the backup ({e.strerror}); {self.path} left untouched") from None
        if data is None:
            try:
                self.path.unlink()
            except FileNotFoundError:
                pass
            return
        try:
            mode = self.path.stat().st_mode & 0o777
        except OSError:
            mode = 0o600
        try:
            write_atomic(self.path, data, mode=mode)
        except BaseException as e:
            if isinstance(e, OSError):
                raise SettingsError(f"{self.path}: cannot be written ({e.strerror})") from None
            raise

    def apply(self, feature: str, edit: Callable[[dict], dict[tuple[str, ...], Any]]) -> dict:
        """Run ``edit(doc)`` on the parsed file and write the result.

        ``edit`` changes ``doc`` in place and returns ``{key_path: previous}`` for
        the scalar keys it replaced (previous = ``ClaudeSettings.MISSING`` when the
        key was absent), and for a non-object that ``object_at`` replaced by an
        object to hold them; the first recorded previous value of a key wins, so
        applying twice still restores the user's original. Returns the new doc.
        """
        before = self.read_raw()
        doc = {} if before is None else parse_settings(before, self.path)
        original_doc = json.loads(json.dumps(doc))
        replaced = edit(doc) or {}
        recs = self.records()
        features = recs.setdefault("features", {})
        if not any(features.values()):
            recs["baseline"] = None if before is None else base64.b64encode(before).decode("ascii")
        mine = features.setdefault(feature, {})
        for keys, prev in replaced.items():
            name = "\x1f".join(keys)
            if name not in mine:
                if isinstance(prev, _Container):
                    mine[name] = {"value": prev.value, "container": True}
                else:
                    mine[name] = {"absent": True} if prev is _MISSING else {"value": prev}
        if not mine:
            mine["_touched"] = {"marker": True}
        if doc != original_doc:
            self._write_bytes(serialize(doc), before)
        self._write_records(recs)
        return doc

    def restore(self, feature: str, extra_edit: Callable[[dict], None] | None = None) -> bool:
        """Put back what ``feature`` replaced (and run ``extra_edit``); True when the file changed."""
        recs = self.records()
        features = recs.get("features", {})
        mine = features.get(feature)
        if mine is None and extra_edit is None:
            return False
        before = self.read_raw()
        doc = {} if before is None else parse_settings(before, self.path)
        base_doc = self._baseline_doc(recs)
        if extra_edit is not None:
            extra_edit(doc)
        # Deeper keys first: a container scalpel replaced (``object_at``) goes back after its keys.
        for name, prev in sorted((mine or {}).items(), key=lambda kv: -kv[0].count("\x1f")):
            if name.startswith("_"):
                continue
            keys = tuple(name.split("\x1f"))
            value = _MISSING if prev.get("absent") else prev.get("value")
            now = get_path(doc, keys, _MISSING)
            if prev.get("container") and isinstance(now, dict) and now:
                continue  # the object scalpel made, filled by the user since: theirs now, kept
            _set_path(doc, keys, value)
            if prev.get("absent"):
                _prune_empty(doc, keys, keep=base_doc)
        had = feature in features or "baseline" in recs
        features.pop(feature, None)
        # no file and nothing to put in one: leave it absent (an uninstall never creates settings.json)
        new_bytes: bytes | None = None if before is None and not doc else serialize(doc)
        if not any(features.values()) and "baseline" in recs:
            baseline_b64 = recs.get("baseline")
            baseline = None if baseline_b64 is None else base64.b64decode(baseline_b64)
            if doc == (base_doc or {}):
                new_bytes = baseline
            recs.pop("baseline", None)
        changed = new_bytes != before
        if changed:
            self._write_bytes(new_bytes, before)
        if had:
            self._write_records(recs)
        return changed

    def _baseline_doc(self, recs: dict) -> dict | None:
        """The file as it was before scalpel's first change ({} when absent); None when not recorded."""
        if "baseline" not in recs:
            return None
        b64 = recs.get("baseline")
        return {} if b64 is None else parse_settings(base64.b64decode(b64), self.path)

ClaudeSettings.MISSING = _MISSING  # type: ignore[attr-defined]
