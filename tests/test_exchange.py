"""The flow model: the body sent, the lazily parsed document, what counts as a change."""

from __future__ import annotations

from scalpel_desktop.exchange import ApiRequest, Exchange


def request(body: bytes, **headers: str) -> ApiRequest:
    return ApiRequest("POST", "/v1/messages", "", "anthropic", "messages", headers, body, 0.0)


def test_the_original_bytes_are_sent_unless_a_stage_set_new_ones():
    ex = Exchange(request(b'{"a":1}'))
    assert ex.body_to_send() == b'{"a":1}' and not ex.changed
    ex.new_body = b'{"a":2}'
    assert ex.body_to_send() == b'{"a":2}' and ex.changed


def test_new_bytes_equal_to_the_original_are_not_a_change():
    ex = Exchange(request(b'{"a":1}'))
    ex.new_body = b'{"a":1}'
    assert not ex.changed


def test_an_empty_new_body_is_sent_as_empty_not_replaced_by_the_original():
    ex = Exchange(request(b'{"a":1}'))
    ex.new_body = b""
    assert ex.body_to_send() == b"" and ex.changed


def test_doc_is_parsed_once_and_only_when_asked():
    ex = Exchange(request(b'{"model":"m","messages":[]}'))
    assert not ex.parsed
    doc = ex.doc
    assert doc == {"model": "m", "messages": []} and ex.parsed
    assert ex.doc is doc


def test_doc_is_none_for_a_body_that_is_not_json_or_empty():
    for body in (b"", b"{not json", b"\xff\xfe"):
        ex = Exchange(request(body))
        assert ex.doc is None and ex.parsed


def test_set_doc_hands_over_a_document_without_parsing():
    ex = Exchange(request(b'{"a":1}'))
    handed = {"a": 1}
    ex.set_doc(handed)
    assert ex.doc is handed


def test_a_handed_none_is_kept_rather_than_reparsed():
    ex = Exchange(request(b'{"a":1}'))
    ex.set_doc(None)
    assert ex.parsed and ex.doc is None


def test_client_is_the_user_agent_cut_to_200_characters():
    assert request(b"", **{"user-agent": "claude-cli/2.1.332 (external, cli)"}).client == \
        "claude-cli/2.1.332 (external, cli)"
    assert request(b"", **{"user-agent": "x" * 500}).client == "x" * 200
    assert request(b"").client == ""


def test_each_exchange_gets_its_own_decision_and_realized_list():
    a, b = Exchange(request(b"")), Exchange(request(b""))
    a.decision.figures["k"] = 1
    a.realized.append(object())
    assert b.decision.figures == {} and b.realized == []
    assert a.decision.action == "unchanged"
