"""A bare HTTP/1.1 server on 127.0.0.1 for answers `LocalServer` cannot give: a status line and a body that
stall, trickle, lie about their length or stop half-way. `answer(connection)` writes whatever it likes."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable, Iterator


def read_head(conn: socket.socket) -> bytes | None:
    """What a client sent until the end of its request's head (and any body bytes that came with it), or None
    if it closed the connection first."""
    data = b""
    while b"\r\n\r\n" not in data:
        piece = conn.recv(65536)
        if not piece:
            return None
        data += piece
    return data


class RawServer:
    """Reads each request whole (head and `Content-Length` body) and records it, then: a GET (any method
    but POST) for a path of `files`, when given, is answered from there (404 for the others); every other
    request gets `answer(connection)`. With `hold`, a connection `answer` wrote to stays open until the
    client closes it or the server stops (a body that never completes); without, it is closed."""

    def __init__(
        self,
        answer: Callable[[socket.socket], None],
        files: dict[str, bytes] | None = None,
        *,
        hold: bool = False,
        answered: frozenset[str] = frozenset(),
    ) -> None:
        self.answer = answer
        self.files = files
        self.answered = answered
        """Paths that `answer` answers even with `files` given (a GET of one of them too)."""
        self.hold = hold
        self.requests: list[tuple[str, str, bytes]] = []
        """(method, path, body) of every request, in the order they were read."""
        self.done = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.05)
        self.port = self._listener.getsockname()[1]
        self.base = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self._accept, daemon=True).start()

    def url(self, path: str) -> str:
        return self.base + path

    @property
    def posts(self) -> list[bytes]:
        """The bodies of the POSTs received."""
        return [body for method, _, body in self.requests if method == "POST"]

    def _accept(self) -> None:
        while not self.done.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            data = read_head(conn)
            if data is None:
                return
            head, _, body = data.partition(b"\r\n\r\n")
            length = next(
                (
                    int(line.split(b":")[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                ),
                0,
            )
            while len(body) < length:
                body += conn.recv(65536)
            method, path, _ = head.split(b"\r\n")[0].decode().split(" ", 2)
            self.requests.append((method, path, body))
            if self.files is not None and method != "POST" and path not in self.answered:
                found = self.files.get(path)
                status, payload = ("200 OK", found) if found is not None else ("404 Not Found", b"")
                conn.sendall(
                    f"HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: {len(payload)}\r\n"
                    "Connection: close\r\n\r\n".encode()
                    + payload
                )
                return
            with contextlib.suppress(OSError):
                self.answer(conn)
            if not self.hold:
                return
            conn.settimeout(0.05)
            while not self.done.is_set():
                try:
                    if not conn.recv(65536):
                        return  # the client closed it
                except TimeoutError:
                    continue
                except OSError:
                    return

    def stop(self) -> None:
        self.done.set()
        self._listener.close()


@contextlib.contextmanager
def raw_server(
    answer: Callable[[socket.socket], None], files: dict[str, bytes] | None = None, *, hold: bool = False
) -> Iterator[RawServer]:
    """A `RawServer`, stopped at the end of the block."""
    raw = RawServer(answer, files, hold=hold)
    try:
        yield raw
    finally:
        raw.stop()
