"""RequestBuffer (gravimeta/serving/buffering_worker.py) knows when an HTTP/1.x request has fully
arrived, however its bytes are split, so that no thread ever waits for the rest of one."""

from __future__ import annotations

import pytest

from gravimeta.serving.buffering_worker import MAX_HEAD_BYTES, RequestBuffer

COMPLETE, INCOMPLETE = RequestBuffer.COMPLETE, RequestBuffer.INCOMPLETE

GET = b"GET /api/version HTTP/1.1\r\nHost: x\r\n\r\n"
POST = b'POST /api/metalakes HTTP/1.1\r\nHost: x\r\nContent-Length: 13\r\n\r\n{"name": "m"}'
CHUNKED = (b"POST /api/metalakes HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
           b"4\r\n{\"na\r\n9;ext=1\r\nme\": \"m\"}\r\n0\r\nX-Trailer: t\r\n\r\n")


@pytest.mark.parametrize("request_bytes", [GET, POST, CHUNKED], ids=["no body", "content-length", "chunked"])
def test_a_request_is_complete_with_its_last_byte_and_not_before(request_bytes):
    for split in range(len(request_bytes)):
        buffer = RequestBuffer(request_bytes[:split], max_body=1000)
        assert buffer.state() == INCOMPLETE, split
        assert buffer.feed(request_bytes[split:]) == COMPLETE, split


def test_bytes_fed_one_at_a_time_complete_the_request_exactly_at_the_end():
    buffer = RequestBuffer(b"", max_body=1000)
    states = [buffer.feed(bytes([b])) for b in CHUNKED]
    assert states == [INCOMPLETE] * (len(CHUNKED) - 1) + [COMPLETE]


def test_a_chunked_body_without_trailers_ends_at_the_empty_line():
    body = b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"
    assert RequestBuffer(body[:-2], 1000).state() == INCOMPLETE
    assert RequestBuffer(body, 1000).state() == COMPLETE


def test_too_large_heads_and_bodies_are_named_without_waiting_for_them():
    assert RequestBuffer(b"GET / HTTP/1.1\r\nX: " + b"a" * MAX_HEAD_BYTES, 1000).state() == RequestBuffer.HEAD_TOO_LARGE
    assert RequestBuffer(b"POST / HTTP/1.1\r\nContent-Length: 1001\r\n\r\n", 1000).state() == RequestBuffer.BODY_TOO_LARGE
    big_chunk = b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3e9\r\n"  # 1001 bytes announced
    assert RequestBuffer(big_chunk, 1000).state() == RequestBuffer.BODY_TOO_LARGE


def test_a_malformed_chunk_size_is_handed_to_gunicorns_parser_at_once():
    assert RequestBuffer(b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 1000).state() == COMPLETE


def test_expect_100_continue_is_noticed_and_removed_once_answered():
    head = b"POST / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n"
    buffer = RequestBuffer(head, 1000)
    assert buffer.state() == INCOMPLETE and buffer.expects_continue
    assert buffer.feed(b"{}") == COMPLETE
    assert buffer.without_expect() == b"POST / HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}"
    assert not RequestBuffer(b"POST / HTTP/1.0\r\nExpect: 100-continue\r\n\r\n", 1000).expects_continue
