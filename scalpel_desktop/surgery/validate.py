"""Is a rewritten body exactly the original with some results stubbed?

``validate_rewrite(original_doc, new_doc)`` returns the problems found (an
empty list means the rewrite may be sent). The only difference allowed is
the content of a tool result (Anthropic ``tool_result`` blocks, Chat
``role: "tool"`` messages, Responses ``function_call_output`` items), and
only into a scalpel stub of the same shape (string for string, one text
block for a list) that keeps any cache marker the content had. Everything
else (top-level keys and their order, roles, ids, block counts and order,
thinking blocks, tool inputs, cache breakpoints) must be unchanged.

What the client itself sent is not judged: an empty tool result, an unknown
block type or a fifth breakpoint in the original are passed on as they are
and never a reason to refuse (scalpel 0.1.0 refused any empty result and so
switched pruning off for a whole session after one silent command).

Untouched messages are the very same objects in both documents (the views
rewrite copy-on-write), so validating a 2.9 MB body costs little.

``rewrite_problem(view)`` is what the surgery stage asks before sending: this
check, then the APIs' own request rules (``wire/api_rules.py``) on the
rewritten body.

The one other change ever allowed is a warm cut's pin (``surgery/pin.py``):
``pin_problems(doc, pinned_doc, unit)`` accepts exactly one added
``cache_control`` key on the last block of message ``unit``, and nothing else,
with at most 4 markers in all and every 1h marker before every 5m one; or,
where the client marks the last two messages (Claude Code before 2.1), that
marker MOVED: the same ``cache_control`` value taken off the last block of
``messages[-2]`` (after ``unit``) and put on message ``unit``'s, the last
message's marker untouched, nothing else changed.
"""

from __future__ import annotations

from typing import Any, Iterable

from scalpel_desktop.surgery.doom import is_stub
from scalpel_desktop.surgery.pin import marker_ttls
from scalpel_desktop.wire import api_rules
from scalpel_desktop.wire.jsoncodec import dumps


def _same(a: Any, b: Any) -> bool:
    """Equal including key order (what the bytes on the wire would show)."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, (dict, list)):
        try:
            return dumps(a) == dumps(b)
        except TypeError:
            return a == b
    return a == b


def _markers(obj: Any) -> list[Any]:
    """Every cache_control value below ``obj``, in document order."""
    out: list[Any] = []
    if isinstance(obj, dict):
        if "cache_control" in obj:
            out.append(obj["cache_control"])
        for k, v in obj.items():
            if k != "cache_control" and isinstance(v, (dict, list)):
                out.extend(_markers(v))
    elif isinstance(obj, list):
        for v in obj:
            if isinstance(v, (dict, list)):
                out.extend(_markers(v))
    return out


def _check_stub(path: str, old: Any, new: Any, text_types: tuple[str, ...]) -> list[str]:
    if not is_stub(new):
        return [f"{path}: changed content is not a scalpel stub"]
    if isinstance(old, list):
        if not (isinstance(new, list) and len(new) == 1 and isinstance(new[0], dict) and new[0].get("type") in text_types):
            return [f"{path}: list content must become a list of one text block"]
        extra = set(new[0]) - {"type", "text", "cache_control"}
        if extra:
            return [f"{path}: stub block has unexpected keys {sorted(extra)}"]
    elif not isinstance(new, str):
        return [f"{path}: string content must stay a string"]
    if _markers(old) != _markers(new):
        return [f"{path}: cache markers inside the result changed"]
    return []


def _diff_fields(path: str, old: dict, new: dict, allowed: str) -> list[str]:
    """Same keys in the same order; every value but ``allowed`` unchanged."""
    if list(old) != list(new):
        return [f"{path}: keys changed ({list(old)} -> {list(new)})"]
    return [f"{path}.{k}: changed" for k in old if k != allowed and not _same(old[k], new[k])]


def _validate_anthropic_message(path: str, old: dict, new: dict) -> list[str]:
    problems = _diff_fields(path, old, new, "content")
    if problems:
        return problems
    oc, nc = old.get("content"), new.get("content")
    if _same(oc, nc):
        return []
    if not (isinstance(oc, list) and isinstance(nc, list)):
        return [f"{path}.content: changed"]
    if len(oc) != len(nc):
        return [f"{path}.content: block count changed ({len(oc)} -> {len(nc)})"]
    for j, (ob, nb) in enumerate(zip(oc, nc)):
        if _same(ob, nb):
            continue
        bpath = f"{path}.content[{j}]"
        if not (isinstance(ob, dict) and isinstance(nb, dict)) or ob.get("type") != "tool_result":
            kind = ob.get("type") if isinstance(ob, dict) else type(ob).__name__
            problems.append(f"{bpath}: {kind} block changed")
            continue
        problems += _diff_fields(bpath, ob, nb, "content")
        if not _same(ob.get("content"), nb.get("content")):
            problems += _check_stub(bpath + ".content", ob.get("content"), nb.get("content"), ("text",))
    return problems


def _validate_item(path: str, old: Any, new: Any, responses: bool) -> list[str]:
    if not (isinstance(old, dict) and isinstance(new, dict)):
        return [f"{path}: changed"]
    if responses:
        if old.get("type") != "function_call_output":
            return [f"{path}: {old.get('type') or old.get('role')} item changed"]
        problems = _diff_fields(path, old, new, "output")
        return problems or _check_stub(path + ".output", old.get("output"), new.get("output"), ("input_text", "output_text", "text"))
    if old.get("role") == "tool":
        problems = _diff_fields(path, old, new, "content")
        return problems or _check_stub(path + ".content", old.get("content"), new.get("content"), ("text",))
    return _validate_anthropic_message(path, old, new)


def validate_rewrite(original_doc: Any, new_doc: Any,
                     validated: Iterable[tuple[Any, Any]] = ()) -> list[str]:
    """Problems that make ``new_doc`` unsafe to send in place of ``original_doc`` (empty: OK).

    ``validated``: (original unit, rewritten unit) pairs that already passed
    this check (a previous request's rewrite of the same message objects:
    replayed cuts). A unit pair that is exactly one of them - both the very
    same objects, which the caller keeps alive - is not compared again: the
    per-unit check depends on nothing but the two units. Every other unit is
    compared in full, and the keys around the units always are.
    """
    known = {id(o): (o, n) for o, n in validated}
    if not (isinstance(original_doc, dict) and isinstance(new_doc, dict)):
        return ["documents are not JSON objects"]
    if list(original_doc) != list(new_doc):
        return [f"top-level keys changed ({list(original_doc)} -> {list(new_doc)})"]
    responses = "messages" not in original_doc and isinstance(original_doc.get("input"), list)
    units_key = "input" if responses else "messages"
    problems: list[str] = []
    for k in original_doc:
        if k != units_key and not _same(original_doc[k], new_doc[k]):
            problems.append(f"{k}: changed")
    old_units, new_units = original_doc.get(units_key), new_doc.get(units_key)
    if old_units is new_units:
        return problems
    if not (isinstance(old_units, list) and isinstance(new_units, list)):
        return problems + [f"{units_key}: changed"]
    if len(old_units) != len(new_units):
        return problems + [f"{units_key}: count changed ({len(old_units)} -> {len(new_units)})"]
    for i, (o, n) in enumerate(zip(old_units, new_units)):
        if o is n:
            continue
        pair = known.get(id(o)) if known else None
        if (pair is not None and pair[0] is o and pair[1] is n) or _same(o, n):
            continue
        problems += _validate_item(f"{units_key}[{i}]", o, n, responses)
    # Every part outside the stubbed contents was compared above, and each stub
    # keeps the markers its content had: breakpoints stay in the same places
    # and their number (<= 4 or not, as the client sent it) is unchanged.
    return problems


def pin_problems(doc: Any, pinned_doc: Any, unit: int) -> list[str]:
    """Problems with ``pinned_doc`` as ``doc`` plus one cache marker on message ``unit``'s last block
    (added, or moved there from ``messages[-2]``'s last block: see the module docstring)."""
    if not (isinstance(doc, dict) and isinstance(pinned_doc, dict)) or list(doc) != list(pinned_doc):
        return ["pin: top-level keys changed"]
    problems = [f"pin: {k} changed" for k in doc if k != "messages" and not _same(doc[k], pinned_doc[k])]
    old, new = doc.get("messages"), pinned_doc.get("messages")
    if not (isinstance(old, list) and isinstance(new, list)) or len(old) != len(new):
        return problems + ["pin: message count changed"]
    moved_from = len(old) - 2 if len(old) >= 3 and unit < len(old) - 2 else None
    moved: Any = None
    for i, (o, n) in enumerate(zip(old, new)):
        if i != unit:
            if o is n or _same(o, n):
                continue
            if i == moved_from:
                found, moved = _marker_taken_off(i, o, n)
                problems += found
            else:
                problems.append(f"pin: messages[{i}] changed")
            continue
        if not (isinstance(o, dict) and isinstance(n, dict)) or list(o) != list(n):
            problems.append(f"pin: messages[{i}] keys changed")
            continue
        problems += [f"pin: messages[{i}].{k} changed" for k in o if k != "content" and not _same(o[k], n[k])]
        oc, nc = o.get("content"), n.get("content")
        if isinstance(oc, str) and oc:  # a string pinned as its one text block (surgery/pin.py)
            oc = [{"type": "text", "text": oc}]
        if not (isinstance(oc, list) and isinstance(nc, list)) or len(oc) != len(nc) or not oc:
            problems.append(f"pin: messages[{i}].content changed")
            continue
        problems += [f"pin: messages[{i}].content[{j}] changed" for j in range(len(oc) - 1)
                     if not _same(oc[j], nc[j])]
        ob, nb = oc[-1], nc[-1]
        if not (isinstance(ob, dict) and isinstance(nb, dict)) or "cache_control" in ob \
                or list(nb) != list(ob) + ["cache_control"] or any(not _same(ob[k], nb[k]) for k in ob):
            problems.append(f"pin: messages[{i}] last block changed beyond one added marker")
        elif not (isinstance(nb["cache_control"], dict) and nb["cache_control"].get("type") == "ephemeral"
                  and set(nb["cache_control"]) <= {"type", "ttl"}
                  and nb["cache_control"].get("ttl", "5m") in ("5m", "1h")):
            problems.append(f"pin: messages[{i}] marker is not an ephemeral 5m/1h cache_control")
    if moved is not None:
        pin_block = new[unit]["content"][-1] if isinstance(new[unit], dict) and isinstance(
            new[unit].get("content"), list) and new[unit]["content"] else None
        if not (isinstance(pin_block, dict) and _same(pin_block.get("cache_control"), moved)):
            problems.append(f"pin: the marker taken off messages[{moved_from}] is not the one put on messages[{unit}]")
        last = old[-1].get("content") if isinstance(old[-1], dict) else None
        if not (isinstance(last, list) and last and isinstance(last[-1], dict)
                and isinstance(last[-1].get("cache_control"), dict)):
            problems.append("pin: a marker moved where the client does not mark the last two messages")
    try:
        api_rules.check_breakpoints([t for _, t in marker_ttls(pinned_doc)])
    except api_rules.CacheControlError as e:
        problems.append(f"pin: {e}")
    return problems


def _marker_taken_off(i: int, o: Any, n: Any) -> tuple[list[str], Any]:
    """(problems, the marker) of ``n`` as ``o`` with only its last block's ``cache_control`` removed."""
    bad = [f"pin: messages[{i}] changed beyond one marker taken off its last block"], None
    if not (isinstance(o, dict) and isinstance(n, dict)) or list(o) != list(n):
        return bad
    if any(not _same(o[k], n[k]) for k in o if k != "content"):
        return bad
    oc, nc = o.get("content"), n.get("content")
    if not (isinstance(oc, list) and isinstance(nc, list)) or len(oc) != len(nc) or not oc:
        return bad
    if any(not _same(a, b) for a, b in zip(oc[:-1], nc[:-1])):
        return bad
    ob, nb = oc[-1], nc[-1]
    if not (isinstance(ob, dict) and isinstance(nb, dict)) or not isinstance(ob.get("cache_control"), dict) \
            or "cache_control" in nb or list(nb) != [k for k in ob if k != "cache_control"] \
            or any(not _same(ob[k], nb[k]) for k in nb):
        return bad
    return [], ob["cache_control"]


_API_CHECKS = {"messages": api_rules.validate_messages_body, "chat": api_rules.validate_chat_body,
               "responses": api_rules.validate_responses_body}


_API_KNOWN = "_scalpel_api_known"  # on a view that passed: what the API check learnt of its messages


def api_problem(view: Any, validated: Any = None) -> str:
    """The API's own 400 checks on the rewritten body. A problem the client's
    original already had is the client's, and no reason to refuse.

    ``validated``: the conversation's previous view that passed; the messages
    it shares with this one (the same objects) are not checked again on their
    own (``api_rules.validate_messages_body(known=...)``)."""
    check = _API_CHECKS.get(view.endpoint)
    if check is None:
        return ""
    try:
        if view.endpoint == "messages":
            known = dict(validated.__dict__.get(_API_KNOWN, {})) if validated is not None else {}
            check(view.doc, known=known)
            view.__dict__[_API_KNOWN] = known
        else:
            check(view.doc)
        return ""
    except api_rules.ApiError as e:
        new = e.message
    try:
        check(view.original_doc)
    except api_rules.ApiError as e:
        if e.message == new:
            return ""
    return f"the API would refuse it: {new}"


def rewritten_pairs(view: Any) -> list[tuple[Any, Any]]:
    """(original unit, rewritten unit) of every unit ``view`` rewrote: once its rewrite
    passed ``validate_rewrite``, each pair is known good (units are never mutated)."""
    if view is None or not getattr(view, "replaced", None):
        return []
    old, new = view.original_doc.get(view.units_key), view.doc.get(view.units_key)
    if not isinstance(old, list) or not isinstance(new, list) or len(old) != len(new):
        return []
    units = {r.unit_index for r in (view.result(t) for t in view.replaced) if r is not None}
    return [(old[i], new[i]) for i in sorted(units) if old[i] is not new[i]]


def rewrite_problem(view: Any, validated: Any = None) -> str:
    """Why the rewritten view may not be sent ('' when it may).

    ``validated``: the conversation's previous view, whose rewrite passed this
    very check; its rewritten units that recur here (the same objects) are
    not compared again."""
    try:
        problems = validate_rewrite(view.original_doc, view.doc, validated=rewritten_pairs(validated))
    except Exception as e:  # noqa: BLE001
        return f"validator error {type(e).__name__}: {e}"
    if problems:
        return "; ".join(str(p) for p in problems)[:300]
    return api_problem(view, validated)
