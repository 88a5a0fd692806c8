"""The shipped surgery stage, with what depends on a request body alone found once for every arm.

The bench replays each sequence under several policies in lockstep
(``bench/stage_driver.py``): every stage arm sees the same bodies, so what is
a function of a body (its request shape per warmth) or of a body and the
results an arm replaced in it (the rewritten bytes, the verdict on them, where
their stubs sit) is the same for every arm that gets there. This subclass
keeps those in dicts the arms of one sequence share (``SequenceBodies.shapes``
and ``.verdicts``); everything that is an arm's own (its economist, cut log,
memo, the hashes of what it sent) stays its own. Apart from ``stage_driver``
(over 400 lines with it) so each module says one thing.
"""

from __future__ import annotations

from scalpel_desktop.surgery.stage import SurgeryStage


class SharedBodyStage(SurgeryStage):
    """The shipped stage, with what depends on a body alone found once for every arm:

    * its request shape (region hashes, TTL, per-unit sizes, pinnable blocks), per warmth;
      only what is the arm's own (the hashes of what it sent, its hint) is its own;
    * a rewritten body, keyed by the original document and the results it replaced with
      what (a view changes nothing else: the same replacements are the same bytes, so arms
      that cut the same results send the same body): its bytes, the verdict on it
      (``surgery/validate.rewrite_problem``: a function of the original document and the
      rewritten one) and its results' first offsets (``surgery/offsets``)."""

    shapes: dict[bool, tuple]
    verdicts: dict

    def _sent(self, view) -> list:
        """[bytes, (verdict, what the API check learnt) or None, first result offsets or None]
        of the body ``view`` rewrote."""
        mine = self.verdicts
        doc = view.original_doc
        if mine.get("doc") is not doc:  # a new request: the last one's bodies go
            mine.clear()
            mine["doc"] = doc  # (held: its id stays its own)
        key = replacements(view)
        got = mine.get(key)
        if got is None:
            got = mine[key] = [view.serialize(), None, None]
            mine[id(got[0])] = got  # (the bytes are held in it: their id stays theirs)
        return got

    def _serialize(self, view) -> bytes:
        return self._sent(view)[0]

    def _rewrite_problem(self, view, validated=None) -> str:
        from scalpel_desktop.surgery.validate import _API_KNOWN, rewrite_problem

        got = self._sent(view)
        if got[1] is None:
            problem = rewrite_problem(view, validated=validated)
            got[1] = (problem, view.__dict__.get(_API_KNOWN))
            return problem
        problem, known = got[1]
        if known is not None:  # what the API check learnt of these very messages (checked by identity)
            view.__dict__[_API_KNOWN] = known
        return problem

    def _stub_positions(self, body, view, replayed, cuts) -> list:
        from scalpel_desktop.surgery.offsets import first_result_offsets, stub_positions

        got = self.verdicts.get(id(body))
        if got is None or got[0] is not body or not (replayed or cuts):
            return stub_positions(body, view, replayed, cuts)
        if got[2] is None:
            got[2] = first_result_offsets(body)
        return stub_positions(body, view, replayed, cuts, first=got[2])

    def _shape(self, ex, doc, ckey, model, hashes, layout, pol):
        if ex.new_body is not None or doc is not ex.doc:  # a body this arm changed: its own shape
            return super()._shape(ex, doc, ckey, model, hashes, layout, pol)
        got = self.shapes.get(pol.warm)
        if got is None or got[0] is not doc or got[1] is not ex.request.body:
            shape = super()._shape(ex, doc, ckey, model, hashes, layout, pol)
            self.shapes[pol.warm] = (doc, ex.request.body, shape)
            return shape
        return _with(got[2], key=ckey, model=model, unit_hashes=hashes, rewrite_at=ex.client_rewrite_at)


def _with(shape, **fields):
    """``dataclasses.replace(shape, **fields)`` for a RequestShape (a plain frozen dataclass:
    no __post_init__, no slots), without running its __init__ again (a sixth of the time
    the arms spent on their shapes)."""
    out = object.__new__(type(shape))
    d = out.__dict__
    d.update(shape.__dict__)
    d.update(fields)
    return out


def replacements(view) -> tuple:
    """What ``view`` replaced, in a canonical order: with its original document, what its
    rewritten body is made of (the only write a view offers is a result's content)."""
    from scalpel_desktop.wire.jsoncodec import dumps

    return tuple(sorted((tid, c if isinstance(c, str) else dumps(c)) for tid, c in view.replaced.items()))
