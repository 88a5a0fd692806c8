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


def test_a_body_nested_deeper_than_the_codec_writes_is_forwarded_quietly(tmp_path, caplog):
    """Found by tests/proxy/test_fuzz_bodies.py: orjson reads 1024 levels but writes 254,
    so such a body parsed and then made parse-reuse and surgery raise (an ERROR with a
    traceback per request). It is a body the pipeline cannot understand: forwarded as
    sent, decision unchanged, nothing logged above INFO, the later stages see no JSON."""
    import logging

    from scalpel_desktop.config import Config
    from scalpel_desktop.pipeline.parse_reuse import ParseReuse
    from scalpel_desktop.surgery.stage import build_surgery_stage
    from scalpel_desktop.store.db import connect

    deep = b"[" * 300 + b"1" + b"]" * 300
    body = b'{"model":"m","messages":[{"role":"user","content":' + deep + b"}]}"
    surgery = build_surgery_stage(Config.load(), connect(tmp_path / "s.db"), tmp_path / "spill")
    seen = []

    class Later:
        name, mutates = "later", False

        def on_request(self, ex):
            seen.append(ex.doc)

        def on_response(self, ex):
            pass

    with caplog.at_level(logging.INFO, logger="scalpel"):
        chain = Chain([ParseReuse(), Identify(), surgery, Later()])
        ex = chain.process(req(body))
        # A first sighting goes out before anything re-serializes it; what cannot be
        # written back is found after the response, and said in the decision.
        assert ex.body_to_send() == body and not ex.changed
        chain.complete(ex, ResponseResult(200, None, 1, 1, 2))
    assert ex.decision.action == "unchanged" and "deeper" in ex.decision.reason
    assert len(seen) == 1
    assert not [r for r in caplog.records if r.levelno > logging.INFO]
