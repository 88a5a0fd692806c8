"""The APIs' request rules: what the real APIs answer 400 to.

Shipped code checks every rewrite against these (``surgery/validate.py``);
the emulator answers with them. One definition of the cache marker rules
(``check_breakpoints``) serves both and the cache model.

Strict where the real API is strict (tool results answer the preceding
assistant turn's tool uses, every tool use is answered, no empty text, at most
4 cache markers, 1h before 5m, model and max_tokens present), and accepting
everything real Claude Code sends (``role: "system"`` messages inside
``messages``, empty ones included, ``tool_reference`` blocks, thinking blocks, consecutive
same-role messages, unknown top-level fields such as ``context_management``
or ``output_config``). The corpus test checks every captured body passes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from scalpel_desktop.wire.cache_rules import CACHE_TTLS, MAX_BREAKPOINTS


class CacheControlError(ValueError):
    """A request the real API rejects for its cache markers (HTTP 400)."""


def check_breakpoints(ttls: Sequence[str]) -> None:
    """The API's own checks on the cache markers of one request, in order tools -> system -> messages."""
    if len(ttls) > MAX_BREAKPOINTS:
        raise CacheControlError(
            f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. Found {len(ttls)}.")
    seen_5m = False
    for ttl in ttls:
        if ttl == "5m":
            seen_5m = True
        elif ttl == "1h" and seen_5m:
            raise CacheControlError(
                "a ttl='1h' cache_control block must not come after a ttl='5m' cache_control block. "
                "Note that blocks are processed in the following order: `tools`, `system`, `messages`.")


class ApiError(Exception):
    """An error answer: HTTP status, the API's error type, a message."""

    def __init__(self, status: int, error_type: str, message: str):
        super().__init__(message)
        self.status = status
        self.error_type = error_type
        self.message = message

    def anthropic_body(self) -> dict:
        return {"type": "error", "error": {"type": self.error_type, "message": self.message}}

    def openai_body(self) -> dict:
        return {"error": {"message": self.message, "type": self.error_type, "param": None, "code": None}}


def bad(message: str) -> ApiError:
    return ApiError(400, "invalid_request_error", message)


ROLES = ("user", "assistant", "system")


def validate_messages_body(body: Any, *, count_tokens: bool = False, known: dict | None = None) -> None:
    """Raise ``ApiError`` for a Messages (or count_tokens) body the API would refuse.

    ``known``: what an earlier check learnt of each message it passed, by
    identity (``{id(message): (message, ...)}``; refilled with this body's
    messages). A message object seen there is not checked again on its own
    (messages are never mutated once built); what depends on the others -
    the tool_use / tool_result pairing, unique ids, the marker count - is.
    The errors are those of a check without it."""
    if not isinstance(body, Mapping):
        raise bad("Request body must be a JSON object")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise bad("model: Field required")
    if not count_tokens:
        mt = body.get("max_tokens")
        if not isinstance(mt, int) or isinstance(mt, bool):
            raise bad("max_tokens: Field required")
        if mt < 1:
            raise bad("max_tokens: Input should be greater than or equal to 1")
    stream = body.get("stream")
    if stream is not None and not isinstance(stream, bool):
        raise bad("stream: Input should be a valid boolean")
    _validate_tools(body.get("tools"))
    _validate_system(body.get("system"))
    messages = body.get("messages")
    if not isinstance(messages, list):
        raise bad("messages: Field required")
    if not messages:
        raise bad("messages: at least one message is required")
    seen = {} if known is not None else None
    _validate_messages(messages, known, seen)
    top = body.get("cache_control")
    # order: tools -> system -> messages (collected in that order below)
    ordered = _tool_ttls(body.get("tools")) + _system_ttls(body.get("system")) + _message_ttls(messages, known, seen)
    if known is not None and seen is not None:
        known.clear()
        known.update(seen)
    if top is not None:
        ordered.append(_ttl(top, "cache_control"))
    try:
        check_breakpoints(ordered)  # the one definition of the marker rules
    except CacheControlError as e:
        raise bad(str(e)) from None


def _ttl(cc: Any, where: str) -> str:
    if not isinstance(cc, Mapping) or cc.get("type") != "ephemeral":
        raise bad(f"{where}.type: Input should be 'ephemeral'")
    ttl = cc.get("ttl", "5m")
    if ttl not in CACHE_TTLS:
        raise bad(f"{where}.ttl: Input should be '5m' or '1h'")
    return ttl


def _tool_ttls(tools: Any) -> list[str]:
    return [_ttl(t["cache_control"], f"tools.{i}.cache_control") for i, t in enumerate(tools or [])
            if isinstance(t, Mapping) and t.get("cache_control") is not None]


def _system_ttls(system: Any) -> list[str]:
    if not isinstance(system, list):
        return []
    return [_ttl(b["cache_control"], f"system.{i}.cache_control") for i, b in enumerate(system)
            if isinstance(b, Mapping) and b.get("cache_control") is not None]


def _message_ttls(messages: list, known: dict | None = None, seen: dict | None = None) -> list[str]:
    out = []
    for i, m in enumerate(messages):
        got = known.get(("ttl", id(m))) if known is not None else None
        if got is not None and got[0] is m:
            out.extend(got[1])
            if seen is not None:
                seen[("ttl", id(m))] = got
            continue
        mine = []
        content = m.get("content") if isinstance(m, Mapping) else None
        if isinstance(content, list):
            for j, b in enumerate(content):
                if isinstance(b, Mapping) and b.get("cache_control") is not None:
                    mine.append(_ttl(b["cache_control"], f"messages.{i}.content.{j}.cache_control"))
        out.extend(mine)
        if seen is not None:
            seen[("ttl", id(m))] = (m, mine)
    return out


def _validate_tools(tools: Any) -> None:
    if tools is None:
        return
    if not isinstance(tools, list):
        raise bad("tools: Input should be a valid list")
    names = set()
    for i, t in enumerate(tools):
        if not isinstance(t, Mapping):
            raise bad(f"tools.{i}: Input should be an object")
        name = t.get("name")
        if not isinstance(name, str) or not name:
            raise bad(f"tools.{i}.name: Field required")
        if name in names:
            raise bad("tools: Tool names must be unique.")
        names.add(name)
        if "type" not in t and not isinstance(t.get("input_schema"), Mapping):
            raise bad(f"tools.{i}.custom.input_schema: Field required")


def _validate_system(system: Any) -> None:
    if system is None or isinstance(system, str):
        return
    if not isinstance(system, list):
        raise bad("system: Input should be a valid string or list")
    for i, b in enumerate(system):
        if not isinstance(b, Mapping) or b.get("type") != "text":
            raise bad(f"system.{i}.type: Input should be 'text'")
        if not isinstance(b.get("text"), str) or not b["text"]:
            raise bad(f"system.{i}.text: text content blocks must be non-empty")


def _validate_messages(messages: list, known: dict | None = None, seen: dict | None = None) -> None:
    """Roles, content, and the tool_use / tool_result pairing.

    Consecutive messages of one role form one turn (the API merges them);
    ``system`` messages sit outside the pairing."""
    turns: list[tuple[str, int, list[str], list[str]]] = []  # (role, first index, uses, results)
    seen_ids: set[str] = set()
    for i, m in enumerate(messages):
        last = i == len(messages) - 1
        got = known.get(id(m)) if known is not None else None
        if got is not None and got[0] is m and got[1] == last:
            _, _, role, use_at, results = got
            for j, tid in use_at:
                if tid in seen_ids:
                    raise bad(f"messages.{i}.content.{j}: `tool_use` ids must be unique")
                seen_ids.add(tid)
            uses = [tid for _, tid in use_at]
            if seen is not None:
                seen[id(m)] = got
        else:
            role, uses, results, use_at = _check_message(i, m, last, seen_ids)
            if seen is not None:
                seen[id(m)] = (m, last, role, use_at, results)
        if role == "system":
            continue
        if turns and turns[-1][0] == role:
            turns[-1][2].extend(uses)
            turns[-1][3].extend(results)
        else:
            turns.append((role, i, list(uses), list(results)))
    _check_pairing(turns)


def _check_message(i: int, m: Any, last: bool, seen_ids: set[str]) -> tuple[str, list[str], list[str], list]:
    """One message's own checks: (role, tool_use ids, tool_result ids, (block index, tool_use id))."""
    if not isinstance(m, Mapping):
        raise bad(f"messages.{i}: Input should be an object")
    role = m.get("role")
    if role not in ROLES:
        raise bad(f"messages.{i}.role: Input should be 'user' or 'assistant'")
    content = m.get("content")
    if isinstance(content, (str, list)):
        # An empty system message is accepted: Claude Code 2.1.332 sends {"role":"system","content":[]}
        # after /compact and auto-compaction, and the real API answers it (docs/emulator.md).
        if not content and role != "system" and not (last and role == "assistant"):
            raise bad("messages: all messages must have non-empty content except for the optional "
                      "final assistant message")
    else:
        raise bad(f"messages.{i}.content: Input should be a valid string or list")
    blocks = content if isinstance(content, list) else []
    use_at: list[tuple[int, str]] = []
    uses, results = _check_blocks(i, role, blocks, seen_ids, use_at)
    return role, uses, results, use_at


def _check_pairing(turns: list[tuple[str, int, list[str], list[str]]]) -> None:
    pending: tuple[int, list[str]] | None = None
    for role, first, uses, results in turns:
        if role == "user":
            expected = pending[1] if pending else []
            unexpected = [r for r in results if r not in expected]
            if unexpected:
                raise bad(f"messages.{first}.content.0: unexpected `tool_use_id` found in `tool_result` blocks: "
                          f"{unexpected[0]}. Each `tool_result` block must have a corresponding `tool_use` "
                          "block in the previous message.")
            if pending:
                missing = [u for u in pending[1] if u not in results]
                if missing:
                    raise _unanswered(pending[0], missing)
            pending = None
        else:
            pending = (first, uses) if uses else None


def _check_blocks(i: int, role: str, blocks: list, seen_ids: set[str],
                  use_at: list[tuple[int, str]] | None = None) -> tuple[list[str], list[str]]:
    uses: list[str] = []
    results: list[str] = []
    for j, b in enumerate(blocks):
        where = f"messages.{i}.content.{j}"
        if not isinstance(b, Mapping) or not isinstance(b.get("type"), str):
            raise bad(f"{where}: Input should be a content block object with a type")
        t = b["type"]
        if t == "text":
            if not isinstance(b.get("text"), str):
                raise bad(f"{where}.text: Field required")
            if not b["text"]:
                raise bad(f"{where}.text: text content blocks must be non-empty")
        elif t == "tool_use":
            if role != "assistant":
                raise bad(f"{where}: tool_use blocks can only be in assistant messages")
            tid = b.get("id")
            if not isinstance(tid, str) or not tid:
                raise bad(f"{where}.id: Field required")
            if tid in seen_ids:
                raise bad(f"{where}: `tool_use` ids must be unique")
            seen_ids.add(tid)
            uses.append(tid)
            if use_at is not None:
                use_at.append((j, tid))
        elif t == "tool_result":
            if role != "user":
                raise bad(f"{where}: tool_result blocks can only be in user messages")
            tid = b.get("tool_use_id")
            if not isinstance(tid, str) or not tid:
                raise bad(f"{where}.tool_use_id: Field required")
            results.append(tid)
    return uses, results


def _unanswered(index: int, ids: list[str]) -> ApiError:
    return bad(f"messages.{index}: `tool_use` ids were found without `tool_result` blocks immediately after: "
               f"{', '.join(ids)}. Each `tool_use` block must have a corresponding `tool_result` block in the "
               "next message.")


# --------------------------------------------------------------------------- OpenAI


def _require_openai_model(body: Any, missing: str) -> None:
    """A JSON object with a model, or the error OpenAI answers (each endpoint words ``missing`` its own way)."""
    if not isinstance(body, Mapping):
        raise bad("We could not parse the JSON body of your request.")
    if not isinstance(body.get("model"), str) or not body["model"]:
        raise bad(missing)


def validate_chat_body(body: Any) -> None:
    """Chat Completions: model, messages, and tool messages answering tool_calls."""
    _require_openai_model(body, "you must provide a model parameter")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise bad("[] is too short - 'messages'" if isinstance(messages, list) else "Missing required parameter: 'messages'.")
    pending: list[str] = []
    for i, m in enumerate(messages):
        if not isinstance(m, Mapping) or m.get("role") not in ("system", "developer", "user", "assistant", "tool"):
            raise bad(f"Invalid value for 'messages[{i}].role'.")
        role = m["role"]
        if role == "tool":
            tid = m.get("tool_call_id")
            if tid not in pending:
                raise bad("Invalid parameter: messages with role 'tool' must be a response to a preceeding "
                          "message with 'tool_calls'.")
            pending.remove(tid)
            continue
        if pending:
            raise _calls_unanswered(pending)
        if role == "assistant":
            for c in m.get("tool_calls") or []:
                if isinstance(c, Mapping) and isinstance(c.get("id"), str):
                    pending.append(c["id"])
    if pending and messages[-1].get("role") != "assistant":
        raise _calls_unanswered(pending)


def _calls_unanswered(ids: list[str]) -> ApiError:
    return bad("An assistant message with 'tool_calls' must be followed by tool messages responding to each "
               f"'tool_call_id'. The following tool_call_ids did not have response messages: {', '.join(ids)}")


def validate_responses_body(body: Any) -> None:
    """Responses: model, input, and function_call_output items answering a function_call."""
    _require_openai_model(body, "Missing required parameter: 'model'.")
    items = body.get("input")
    if isinstance(items, str) or items is None:
        return
    if not isinstance(items, list):
        raise bad("Invalid type for 'input': expected a string or an array.")
    calls: set[str] = set()
    for item in items:
        if not isinstance(item, Mapping):
            raise bad("Invalid type for 'input[]': expected an object.")
        if item.get("type") == "function_call":
            calls.add(str(item.get("call_id")))
        elif item.get("type") == "function_call_output" and not body.get("previous_response_id"):
            if str(item.get("call_id")) not in calls:
                raise bad(f"No tool call found for function call output with call_id {item.get('call_id')}.")
