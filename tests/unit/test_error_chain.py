"""Walks over an error's cause chain end, even when the chain loops back on itself."""

from __future__ import annotations

from flask import Flask, g

from gravimeta import errors
from gravimeta.api.errors import note_refusal
from gravimeta.error_chain import error_chain
from gravimeta.store.lock_waits import timed_out


def looped(length: int) -> list[errors.GravitinoError]:
    """`length` errors, each raised from the next, the last from the first."""
    chain = [errors.SchemaAlreadyExists(f"error {i}") for i in range(length)]
    for this, cause in zip(chain, chain[1:] + chain[:1], strict=True):
        this.__cause__ = cause
    return chain


def test_error_chain_yields_each_error_of_a_cycle_once():
    for length in (1, 2, 3):
        chain = looped(length)
        assert list(error_chain(chain[0])) == chain


def test_error_chain_follows_the_context_only_when_asked_and_stops_at_its_limit():
    handled = ValueError("while handling")
    raised = KeyError("raised")
    raised.__context__ = handled
    assert list(error_chain(raised)) == [raised, handled]
    assert list(error_chain(raised, implicit=False)) == [raised]
    assert list(error_chain(raised, limit=1)) == [raised]
    context_loop = ValueError("a")
    context_loop.__context__ = KeyError("b")
    context_loop.__context__.__context__ = context_loop
    assert len(list(error_chain(context_loop))) == 2


def test_note_refusal_ends_on_an_error_raised_from_itself():
    (error,) = looped(1)
    error.detail = "secret"
    with Flask(__name__).test_request_context():
        note_refusal(error)
        assert g.refusal == {"error": "SchemaAlreadyExistsException", "reason": "error 0", "detail": "secret"}


def test_the_lock_timeout_check_ends_on_a_cycle():
    assert timed_out(looped(2)[0]) is False
