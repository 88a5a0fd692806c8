import json

from scalpel_desktop.wire.identity import conversation_key


def test_json_user_id_and_agent_header():
    body = {"metadata": {"user_id": json.dumps({"device_id": "d", "session_id": "abc-123"})}, "messages": []}
    k = conversation_key({"X-Claude-Code-Agent-Id": "agent-7"}, body)
    assert (k.session_id, k.agent_id, k.source) == ("abc-123", "agent-7", "metadata")


def test_old_user_id_format():
    uid = "user_" + "ab" * 32 + "_account__session_3f2a1b4c-1111-2222-3333-444455556666"
    k = conversation_key({}, {"metadata": {"user_id": uid}})
    assert k.session_id == "3f2a1b4c-1111-2222-3333-444455556666"


def test_header_then_prompt_cache_key_then_hash():
    assert conversation_key({"x-claude-code-session-id": "s1"}, {}).session_id == "s1"
    assert conversation_key({}, {"prompt_cache_key": "pck"}).source == "prompt_cache_key"
    a = conversation_key({}, {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "x"}]})
    b = conversation_key({}, {"messages": [{"role": "user", "content": "hi"}]})
    c = conversation_key({}, {"messages": [{"role": "user", "content": "other"}]})
    assert a == b and a != c and a.source == "hash"


def test_subagent_and_parent_differ():
    body = {"metadata": {"user_id": json.dumps({"session_id": "s"})}}
    assert conversation_key({}, body) != conversation_key({"x-claude-code-agent-id": "a1"}, body)
