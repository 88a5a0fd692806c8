"""The observing stage that measures each conversation's tokens per byte from its usage counts.

On every answered request with usage counts it hands the conversation's
(bytes sent, prompt total) to ``accounting.token_ratio.ConversationRatios`` and
puts the ratio it answers on ``ex.token_ratio``. It sits before the tool filter
and the surgery, so their ``on_response`` (which price the realized savings:
the bytes they removed times this ratio) see it. Pure arithmetic on numbers the
exchange already holds: no parsing, no disk.
"""

from __future__ import annotations

from scalpel_desktop.accounting.token_ratio import ConversationRatios
from scalpel_desktop.exchange import Exchange
from scalpel_desktop.wire.view import ENDPOINTS


class Calibrate:
    name = "calibrate"
    mutates = False

    def __init__(self, ratios: ConversationRatios | None = None):
        self.ratios = ratios or ConversationRatios()

    def on_request(self, ex: Exchange) -> None:
        pass

    on_turn = on_request

    def on_response(self, ex: Exchange) -> None:
        res = ex.response
        if res is None or res.usage is None or res.status >= 400 or ex.request.endpoint not in ENDPOINTS:
            return
        prompt = res.usage.prompt_tokens
        sent = len(ex.body_to_send())
        if prompt <= 0 or sent <= 0:
            return
        key = (ex.key.session_id, ex.key.agent_id, ex.model) if ex.key is not None else (None, None, ex.model)
        ex.token_ratio = self.ratios.observe(key, ex.model, sent, prompt)
