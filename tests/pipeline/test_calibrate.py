from scalpel_desktop.exchange import ApiRequest, Exchange, ResponseResult
from scalpel_desktop.pipeline.calibrate import Calibrate
from scalpel_desktop.wire.identity import ConversationKey
from scalpel_desktop.wire.usage import Usage


def _ex(body: bytes, usage, status=200, endpoint="messages") -> Exchange:
    ex = Exchange(ApiRequest("POST", "/v1/messages", "", "anthropic", endpoint, {}, body, 1.0))
    ex.key, ex.model = ConversationKey("s", None, "header"), "claude-opus-5-5"
    ex.response = ResponseResult(status, usage, 1.0, 1.0, 2.0)
    return ex


def test_each_answer_gets_its_conversations_ratio_from_the_bytes_sent():
    stage = Calibrate()
    got = []
    for n in range(1, 8):
        ex = _ex(b"x" * (4000 * n), Usage(input_tokens=10, cache_read=1000 * n - 10))
        stage.on_response(ex)
        got.append(ex.token_ratio)
    assert got[0].method == "own_request" and got[-1].method == "fit"
    assert abs(got[-1].tokens_per_byte - 0.25) < 1e-6


def test_no_ratio_without_usage_or_on_errors_or_other_endpoints():
    stage = Calibrate()
    for ex in (_ex(b"x" * 100, None), _ex(b"x" * 100, Usage(input_tokens=5), status=529),
               _ex(b"x" * 100, Usage(input_tokens=5), endpoint="count_tokens")):
        stage.on_response(ex)
        assert ex.token_ratio is None
