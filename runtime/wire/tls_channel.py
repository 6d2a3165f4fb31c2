"""TLS as bytes in, bytes out (stdlib `ssl.SSLObject` over two `ssl.MemoryBIO`s), so that a Connection
on TLS keeps the fast path of a plain socket: it encrypts a burst into one buffer and writes that to
the socket directly (one `os.write`, no task switch), and decrypts what one read of the socket brought.

`TLSChannel.handshake(stream)` runs the TLS handshake over any trio stream (the only step that waits);
then the Connection (connection.py) calls `encrypt` on each burst it sends and `decrypt` on each read,
both synchronous. Records the TLS layer sends on its own after the handshake go out in order with the
Connection's: OpenSSL answers a peer's TLS 1.3 KeyUpdate with the next `encrypt` (its KeyUpdate ahead
of the data, as RFC 8446 4.6.3 allows), and what it makes while reading (the no_renegotiation alert
to a TLS 1.2 peer that asks to renegotiate: tls.py refuses it) waits in `output()` after a `decrypt`
for the Connection to write. tests/runtime/wire/test_tls_post_handshake.py checks both against the
`openssl` tool, which sends key updates, session tickets, renegotiations and close_notify on demand.

Against trio.SSLStream (what it replaces on every link): the same ssl contexts and the same record
layer; encryption happens where a burst is queued (so bytes leave in the order they were encrypted),
and the writing, backpressure, stall and close rules stay the Connection's. A closing side does not
send close_notify (trio's `aclose_forcefully` did not either): the framing, not the TLS session,
says where a message ends, so a truncated stream is seen as one.

Error handling: `handshake` raises ssl.SSLError (tls.describe_failure names it) or ssl.SSLEOFError
when the peer closes first; `decrypt` raises ssl.SSLError for a record that fails its check (a byte
changed on the way: DECRYPTION_FAILED_OR_BAD_RECORD_MAC) and EOFError once the peer ended the TLS
session (close_notify). After an error the channel is unusable: its connection is closed.
"""

from __future__ import annotations

import ssl

import trio

from .framing import RECEIVE_SIZE

RECORD = 16 * 1024  # the largest plaintext of one TLS record: one read gives at most this much
HANDSHAKE_TAIL = 256  # bytes of the handshake's input kept to read a plain-text refusal in (tls.start_tls)


class TLSChannel:
    """One side of a TLS session (`server_side` or not) under `context`, not tied to any stream."""

    def __init__(self, context: ssl.SSLContext, *, server_side: bool) -> None:
        self._incoming = ssl.MemoryBIO()
        self._outgoing = ssl.MemoryBIO()
        self._ssl = context.wrap_bio(self._incoming, self._outgoing, server_side=server_side)
        self.handshake_tail = b""  # the last bytes the handshake received (a refusal in plain text ends them)

    async def handshake(self, stream: trio.abc.Stream) -> None:
        """Run the TLS handshake over `stream` (the caller bounds it in time); what arrives after it
        stays buffered for `decrypt`."""
        while True:
            try:
                self._ssl.do_handshake()
            except ssl.SSLWantReadError:
                pending = self._outgoing.read()
                if pending:
                    await stream.send_all(pending)
                data = await stream.receive_some(RECEIVE_SIZE)
                if data:
                    self._incoming.write(data)
                    self.handshake_tail = (self.handshake_tail + data)[-HANDSHAKE_TAIL:]
                else:
                    self._incoming.write_eof()  # the next step raises SSLEOFError
                continue
            pending = self._outgoing.read()  # the last flight (a client's Finished, a server's tickets)
            if pending:
                await stream.send_all(pending)
            return

    def getpeercert(self) -> dict:
        """The peer's certificate as `ssl.SSLSocket.getpeercert()` gives it (verified by the handshake)."""
        return self._ssl.getpeercert() or {}

    def encrypt(self, data: bytes | bytearray | memoryview) -> bytes:
        """The TLS records of `data`, with any bytes the TLS layer had waiting before them."""
        self._ssl.write(data)
        return self._outgoing.read()

    @property
    def buffered(self) -> bool:
        """Ciphertext is waiting to be decrypted (it came with the handshake's last read)."""
        return self._incoming.pending > 0

    def decrypt(self, data: bytes | bytearray) -> bytes:
        """The plaintext of `data` (bytes as read from the stream; b"" adds none) and of what was
        buffered before it; a record cut short waits for the rest."""
        if data:
            self._incoming.write(data)
        read, incoming = self._ssl.read, self._incoming
        first = b""
        chunks: list[bytes] | None = None
        while incoming.pending:
            try:
                chunk = read(RECORD)
            except ssl.SSLWantReadError:  # a record cut short
                break
            if not chunk:  # close_notify: the peer ended the session
                raise EOFError("the peer ended the TLS session")
            if not first:
                first = chunk
            elif chunks is None:
                chunks = [first, chunk]
            else:
                chunks.append(chunk)
        return first if chunks is None else b"".join(chunks)

    @property
    def has_output(self) -> bool:
        """The TLS layer has bytes to send now (after `decrypt`: rare, an alert it made while reading)."""
        return self._outgoing.pending > 0

    def output(self) -> bytes:
        """Those bytes (see `has_output`)."""
        return self._outgoing.read()
