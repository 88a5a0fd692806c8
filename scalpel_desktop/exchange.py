"""The flow model: one request on its way through the pipeline, and what stages say about it.

The proxy builds an ``ApiRequest`` for each API call, asks the pipeline to
``process`` it, forwards ``exchange.body_to_send()`` (the original bytes
unless a stage changed them), and hands the response's usage and timings to
``complete``. It knows nothing else about the pipeline.

Stages talk to each other only through the typed fields of ``Exchange``
(where each message sits, where the client rewrote its history, what the
surgery sent, the tool filter's pin, the realized savings): no string keys.
At the bottom of the house: imports only ``wire/`` and ``decisions.py``; nothing here imports
aiohttp.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Protocol

from scalpel_desktop.decisions import CHANGES
from scalpel_desktop.decisions import label as decision_label
from scalpel_desktop.wire.cache_diagnosis import ProviderDiagnosis
from scalpel_desktop.wire.identity import ConversationKey
from scalpel_desktop.wire.jsoncodec import JSONDecodeError, loads
from scalpel_desktop.wire.layout import Layout
from scalpel_desktop.wire.usage import Usage

_UNPARSED = object()


@dataclass
class ApiRequest:
    method: str
    path: str  # upstream path, without query string and without the /openai prefix
    query: str
    api: str  # "anthropic" | "openai"
    endpoint: str  # "messages" | "count_tokens" | "chat" | "responses" | "other"
    headers: Mapping[str, str]  # lower-cased names; read only
    body: bytes
    received_at: float  # clock.now() when the request arrived

    @property
    def client(self) -> str:
        return self.headers.get("user-agent", "")[:200]


@dataclass
class Decision:
    """What the pipeline did to one request, and why. Stored in the ledger.

    ``changes`` is the set of changes stages made to the bytes (``decisions.CHANGES``:
    cut, replayed, filtered); each stage ``add``s its own, none overwrites another's.
    ``action`` is the outcome when there is none (unchanged | paused | error).
    ``label`` is what the ledger stores: the changes joined by ``+``, else ``action``."""

    action: str = "unchanged"  # unchanged | paused | error (when ``changes`` is empty)
    reason: str = ""
    tokens_removed: int = 0  # estimated tokens no longer sent
    figures: dict[str, Any] = field(default_factory=dict)  # rewrite tokens, payback, ...
    changes: set[str] = field(default_factory=set)

    def add(self, change: str, reason: str = "", tokens_removed: int = 0) -> None:
        """Record one change (``decisions.CHANGES``) with its reason and estimated tokens."""
        if change not in CHANGES:
            raise ValueError(f"unknown change {change!r}")
        self.changes.add(change)
        self.note(reason)
        self.tokens_removed += int(tokens_removed or 0)

    def note(self, reason: str) -> None:
        """Append a reason (``; ``-separated) to what earlier stages said."""
        if reason and reason not in self.reason:
            self.reason = f"{self.reason}; {reason}" if self.reason else reason

    @property
    def label(self) -> str:
        return decision_label(self.changes) if self.changes else self.action


@dataclass
class ResponseResult:
    status: int
    usage: Usage | None
    ttfb_ms: float | None
    total_ms: float | None
    finished_at: float  # clock.now() when the response ended
    error: str = ""
    # The provider's own cache diagnosis when the proxy asked for it (``proxy/diagnostics.py``).
    diagnosis: ProviderDiagnosis | None = None
    stop_reason: str = ""  # why the answer ended (``end_turn``, ``tool_use``, ...): the cache keeper's cue


@dataclass
class Realized:
    """A saving measured from the provider's usage counts (summed by the ledger recorder)."""

    kind: str  # surgery | tool_filter
    tokens: int
    usd: float | None
    # How the figures were obtained (see docs/ledger.md): ``tier`` "usage" (the billing
    # tier read from this request's usage counts); ``tokens`` "fit" | "pooled" |
    # "own_request" (bytes removed x a tokens-per-byte ratio measured from usage, see
    # ``accounting/token_ratio.py``) or "estimate"; ``bytes`` removed; ``tokens_per_byte``,
    # ``pairs``, ``error_pct`` (None: no bound).
    provenance: dict[str, Any] = field(default_factory=dict)


@dataclass
class SurgerySent:
    """What the surgery stage sent for one request, kept until its response ends."""

    serial: int
    key: Any
    model: str
    stubs: list[tuple[str, float, int, str]] = field(default_factory=list)  # (id, position 0..1, tokens saved, new|replayed)
    rewrite_tokens: int = 0
    bytes_removed: int = 0  # bytes the stubs took out of the body (received - sent, this stage's part)
    pin: int | None = None  # the message whose last block carries the pin marker the stage added (None: none)
    staked_usd: float = 0.0  # a warm cut's priced extra, staked from the user's risk budget (surgery/budget.py)
    banked_usd: float = 0.0  # what its replayed stubs surely saved, banked there (set when the answer ends)
    resume: tuple[int, str, float] | None = None  # (units, digest, TTL) for a resume after a restart (m007)


@dataclass
class ToolFilterNote:
    """What the tool filter did to one request (its session's pin and the outcome)."""

    pinned: list[str]
    kept: dict[str, Any]
    left_alone: str = ""
    removed: list[tuple[str, int]] = field(default_factory=list)  # (name, tokens) not sent
    bytes_removed: int = 0  # bytes the filter took out of the body
    realized: dict[str, Any] | None = None  # {"tokens", "usd", "tier"} after the response


@dataclass
class Exchange:
    """One request on its way through the pipeline."""

    request: ApiRequest
    key: ConversationKey | None = None
    model: str = ""
    tokens_before: int | None = None  # estimated input tokens of the original body
    tokens_after: int | None = None  # ... of the body sent
    new_body: bytes | None = None  # set by a stage that changed the request
    decision: Decision = field(default_factory=Decision)
    response: ResponseResult | None = None
    # Where each message sits in the request's own bytes (parse-reuse, or the surgery stage when it
    # located them first), and the remembered body parse-reuse matched (None: located from scratch).
    layout: Layout | None = None
    layout_base: bytes | None = None
    # A first sighting goes out at once; what it costs to understand is done after the response:
    # parse-reuse lays out and remembers these messages (its own note), the surgery stage analyses.
    layout_later: list | None = None
    analyse_later: bool = False
    # Sent as it came before any stage looked (``pipeline/lane.py``): the stages run after the
    # answer and must record it unchanged.
    forwarded: bool = False
    # ... on a ghost's word, and recorded from its new messages after the answer (``surgery/ghost_turn.py``):
    # what the lane found (``ghost.Turn``), set while the stages take their turn.
    turn: Any = field(default=None, repr=False)
    # A replay that knows where the client rewrote its history (the bench) sets this.
    client_rewrite_at: int | None = None
    surgery: SurgerySent | None = None
    tool_filter: ToolFilterNote | None = None
    realized: list[Realized] = field(default_factory=list)
    # The conversation's tokens per byte once the answer arrived (``accounting.token_ratio.TokenRatio``,
    # set by ``pipeline/calibrate.py`` before the stages that price realized savings hear the response).
    token_ratio: Any = None
    # Identify: the working directory the request states (under ~) and its region sizes (tokens).
    project: str | None = None
    regions: dict[str, int] | None = None
    # The tool inventory's record of this request, taken on the request and written after the response.
    inventory: Any = field(default=None, repr=False)
    # Set by ``Chain.answered``: this exchange's completion has not run yet (its conversation's next
    # request waits for it); cleared by ``Chain.complete``.
    pending_completion: Any = field(default=None, repr=False)
    # Set by ``Chain.complete``: a long analysis calls it between its phases, to let requests on their
    # way go first (the runtime's ``RequestsFirst.wait_turn``: bounded); None outside a completion.
    yield_to_requests: Any = field(default=None, repr=False)
    _doc: Any = field(default=_UNPARSED, repr=False)

    @property
    def doc(self) -> Any:
        """The parsed JSON body (None when it is not JSON). Parsed once, lazily."""
        if self._doc is _UNPARSED:
            try:
                self._doc = loads(self.request.body) if self.request.body else None
            except (JSONDecodeError, ValueError):
                self._doc = None
        return self._doc

    @property
    def parsed(self) -> bool:
        """Has the body been parsed already (by ``doc`` or ``set_doc``)?"""
        return self._doc is not _UNPARSED

    def set_doc(self, doc: Any) -> None:
        """Hand over a document equal to ``loads(request.body)``, parsed some cheaper way
        (``pipeline/parse_reuse.py``); ``doc`` then returns it without parsing."""
        self._doc = doc

    def body_to_send(self) -> bytes:
        return self.new_body if self.new_body is not None else self.request.body

    @property
    def changed(self) -> bool:
        return self.new_body is not None and self.new_body != self.request.body


class Stage(Protocol):
    """A pipeline stage. ``mutates`` stages are skipped while paused."""

    name: str
    mutates: bool

    def on_request(self, ex: Exchange) -> None: ...

    def on_response(self, ex: Exchange) -> None: ...


class Pipeline(Protocol):
    """What the proxy sees of the pipeline (``pipeline.chain.Chain``)."""

    def process(self, request: ApiRequest, *, paused: bool | None = None) -> Exchange: ...

    def complete(self, ex: Exchange, result: ResponseResult) -> None: ...

    def answered(self, ex: Exchange) -> None:
        """The client has ``ex``'s answer; ``complete`` runs later (the conversation's next request
        waits for it in ``process``)."""
        ...

    def observe_only(self) -> bool | None:
        """The pause switch as read now when no stage that could change a body would
        run (``True``/``False``); None when one would."""
        ...

    def get(self, name: str) -> Any:
        """The stage called ``name``, or None."""
        ...
