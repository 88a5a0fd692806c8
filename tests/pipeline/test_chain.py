from scalpel_desktop.pipeline.chain import Chain
from scalpel_desktop.pipeline.identify import Identify
from scalpel_desktop.exchange import ApiRequest, ResponseResult


def req(body=b'{"model":"m","messages":[{"role":"user","content":"hi"}]}'):
    return ApiRequest("POST", "/v1/messages", "beta=true", "anthropic", "messages", {}, body, 0.0)


class Rewrites:
    name, mutates = "rewrites", True

    def on_request(self, ex):
        ex.new_body = b'{"changed":true}'

    def on_response(self, ex):
        pass


class Explodes:
    name, mutates = "explodes", False

    def on_request(self, ex):
        raise RuntimeError("boom")

    def on_response(self, ex):
        raise RuntimeError("boom again")


def test_identify_observes_only():
    ex = Chain([Identify()]).process(req())
    assert ex.model == "m" and ex.key is not None and ex.tokens_before > 0
    assert ex.body_to_send() == req().body and not ex.changed


def test_an_exception_forwards_the_original_bytes():
    chain = Chain([Rewrites(), Explodes()])
    ex = chain.process(req())
    assert ex.body_to_send() == req().body
    assert ex.decision.action == "error" and "boom" in ex.decision.reason
    chain.complete(ex, ResponseResult(200, None, 1.0, 2.0, 0.0))  # must not raise


def test_paused_skips_mutating_stages():
    ex = Chain([Rewrites()], paused=lambda: True).process(req())
    assert not ex.changed and ex.decision.action == "paused"
    ex = Chain([Rewrites()], paused=lambda: False).process(req())
    assert ex.changed


def test_non_json_body_is_tolerated():
    ex = Chain([Identify()]).process(req(b"\xff not json"))
    assert ex.doc is None and ex.key is None and not ex.changed


def test_the_callers_pause_reading_wins_over_a_later_one():
    """The proxy reads the switch when it forwards; a resume before the pipeline runs changes nothing."""
    ex = Chain([Rewrites()], paused=lambda: False).process(req(), paused=True)
    assert not ex.changed and ex.decision.action == "paused"


def test_a_stage_without_a_mutates_flag_is_skipped_while_paused():
    class Unlabelled:
        name = "unlabelled"

        def on_request(self, ex):
            ex.new_body = b"{}"

        def on_response(self, ex):
            pass

    assert not Chain([Unlabelled()], paused=lambda: True).process(req()).changed
