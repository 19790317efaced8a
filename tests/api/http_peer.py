"""A stand-in for a serving process at the HTTP level, for the proxy's own tests: a threaded TCP
server that answers each request by its path with a scripted HTTP/1.1 answer, and can misbehave
on purpose (close an idle kept-open connection, break off mid-answer, stream slowly) in ways a real
serving process does only by accident. It differs from a serving process in everything else: it
generates nothing and ignores the body. The real serving processes are exercised end to end in
tests/e2e/test_endpoints.py."""

from __future__ import annotations

import socket
import socketserver
import threading
import time


class _Handler(socketserver.BaseRequestHandler):
    def handle(self):
        peer: HttpPeer = self.server.peer
        with peer.lock:
            peer.connections += 1
        sock: socket.socket = self.request
        buffer = b""
        while True:
            while b"\r\n\r\n" not in buffer:
                data = sock.recv(65536)
                if not data:
                    return
                buffer += data
            head, _, buffer = buffer.partition(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            path = lines[0].split(" ")[1]
            length = next((int(line.split(":", 1)[1]) for line in lines[1:]
                           if line.lower().startswith("content-length:")), 0)
            while len(buffer) < length:
                buffer += sock.recv(65536)
            body, buffer = buffer[:length], buffer[length:]
            peer.requests.append((path, body))
            if not getattr(self, "answer_" + path.strip("/").replace("-", "_").replace("/", "_"))(sock):
                return  # the connection is closed

    @staticmethod
    def _plain(sock, payload: bytes = b'{"model": "served", "ok": 1}') -> None:
        sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                     + str(len(payload)).encode() + b"\r\n\r\n" + payload)

    def answer_v1_completions(self, sock) -> bool:
        """What the proxy forwards to: answered as `peer.completions` names (plain by default)."""
        return getattr(self, "answer_" + self.server.peer.completions)(sock)

    answer_v1_chat_completions = answer_v1_completions

    def answer_plain(self, sock) -> bool:
        self._plain(sock)
        return True

    def answer_close_after(self, sock) -> bool:
        """Answers, then drops the kept-open connection without saying so (as an idle timeout does)."""
        self._plain(sock)
        time.sleep(0.05)
        sock.close()
        return False

    def answer_stream(self, sock) -> bool:
        """Chunked: one event, then waits for the test to release the second."""
        peer: HttpPeer = self.server.peer
        sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
        sock.sendall(_chunk(b'data: {"model": "served", "n": 1}\n\n'))
        peer.release.wait(10)
        sock.sendall(_chunk(b'data: {"model": "served", "n": 2}\n\n') + _chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n")
        return True

    def answer_refuse(self, sock) -> bool:
        """An error answer as vLLM and the built-in server write one (naming the served model)."""
        payload = (b'{"error": {"message": "The model `served` cannot take max_tokens 5000", '
                   b'"type": "BadRequestError", "param": "max_tokens", "code": 400}}')
        sock.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: "
                     + str(len(payload)).encode() + b"\r\n\r\n" + payload)
        return True

    def answer_fail(self, sock) -> bool:
        """A 500 whose body is not JSON, as a crashed server's front may answer."""
        payload = b"Internal Server Error"
        sock.sendall(b"HTTP/1.1 500 Internal Server Error\r\nContent-Type: text/plain\r\nContent-Length: "
                     + str(len(payload)).encode() + b"\r\n\r\n" + payload)
        return True

    def answer_break(self, sock) -> bool:
        sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"par")
        sock.close()
        return False

    def answer_slow_stream(self, sock) -> bool:
        """An event every 20 ms for up to 10 s; notes when the reader went away."""
        peer: HttpPeer = self.server.peer
        sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
        try:
            for n in range(500):
                sock.sendall(_chunk(b'data: {"n": %d}\n\n' % n))
                time.sleep(0.02)
        except OSError:
            peer.reader_gone.set()
            return False
        sock.sendall(b"0\r\n\r\n")
        return True


def _chunk(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request, client_address):
        """A client that drops the connection is what several tests do on purpose: no traceback."""


class HttpPeer:
    def __init__(self):
        self.connections = 0
        self.completions = "plain"
        self.requests: list[tuple[str, bytes]] = []
        self.lock = threading.Lock()
        self.release = threading.Event()
        self.reader_gone = threading.Event()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.peer = self
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.release.set()
        self._server.shutdown()
        self._server.server_close()
