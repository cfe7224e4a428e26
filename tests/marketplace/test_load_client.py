"""bench/load.py's HTTP/1.1 client against a scripted server: lengths, chunks, 304s, cookies,
ETags and a server that closes kept-alive connections."""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _load_module():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("bench_load", ROOT / "bench" / "load.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules.setdefault("bench_load", module)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


async def _serve(requests: list[bytes]):  # type: ignore[no-untyped-def]
    """A server answering, in turn: a sized body with a cookie and an ETag; a chunked body;
    a 304 when If-None-Match carries the ETag (else 200); then a sized body with
    Connection: close."""
    answers = iter([
        b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nSet-Cookie: sessionid=abc; Path=/; HttpOnly\r\nETag: \"v1\"\r\n\r\nhello",
        b"HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nfoo\r\n4\r\nbar!\r\n0\r\n\r\n",
        None,
        b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nbye",
        b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nagain",
    ])

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            head = await reader.readuntil(b"\r\n\r\n") if not reader.at_eof() else b""
            if not head:
                break
            length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")), 0)
            body = await reader.readexactly(length) if length else b""
            requests.append(head + body)
            answer = next(answers)
            if answer is None:
                answer = (b"HTTP/1.1 304 Not Modified\r\nETag: \"v1\"\r\n\r\n" if b'If-None-Match: "v1"' in head
                          else b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nno")
            writer.write(answer)
            await writer.drain()
            if b"Connection: close" in answer:
                writer.close()
                return

    return await asyncio.start_server(handle, "127.0.0.1", 0)


def test_the_load_client_speaks_enough_http() -> None:
    load = _load_module()
    requests: list[bytes] = []

    async def scenario() -> list[tuple[int, bytes]]:
        server = await _serve(requests)
        port = server.sockets[0].getsockname()[1]
        client = load.Http(f"http://127.0.0.1:{port}", {"Authorization": "Token t"}, conditional=True)
        out = [await client.request("GET", "/a"),
               await client.request("POST", "/b", b'{"x": 1}', "application/json", {"Idempotency-Key": "k"}),
               await client.request("GET", "/a"),
               await client.request("GET", "/c"),
               await client.request("GET", "/d")]  # on a new connection: the server closed the last one
        await client.close()
        server.close()
        return out

    got = asyncio.run(scenario())
    assert got == [(200, b"hello"), (201, b"foobar!"), (304, b""), (200, b"bye"), (200, b"again")]
    assert b"Authorization: Token t" in requests[0] and b"Cookie" not in requests[0]
    assert b"Cookie: sessionid=abc" in requests[1] and requests[1].endswith(b'{"x": 1}')
    assert b"Content-Type: application/json" in requests[1] and b"Idempotency-Key: k" in requests[1]
    assert b'If-None-Match: "v1"' in requests[2] and b"If-None-Match" not in requests[3]
    assert len(requests) == 5


def test_the_load_mix_bids_clear_the_demo_reserve_price() -> None:
    # given the demo market's reserve price and 200 of the mix's bids
    import random

    from marketplace.management.commands.seed_demo import DEMO_RESERVE

    load = _load_module()
    rng = random.Random(3)
    bids = [load._bid_body(rng) for _ in range(200)]
    # then every budget covers the reserve price times the bid's slot-seconds (else a 400 in the mix)
    assert load.RESERVE == DEMO_RESERVE
    for bid in bids:
        slot_seconds = sum(w["tasks"] * w["task_duration"] for w in bid["work"])
        assert float(bid["budget"]) >= DEMO_RESERVE * slot_seconds + 1
