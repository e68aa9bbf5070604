"""A TCP server on the loopback that records whatever reaches it: what hostile code sends."""

import socket
import threading


class Listener:
    """A TCP server on the loopback that records whatever reaches it."""

    def __init__(self):
        self.server = socket.create_server(("127.0.0.1", 0))
        self.server.settimeout(0.2)
        self.port = self.server.getsockname()[1]
        self.heard, self.running = [], True
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while self.running:
            try:
                conn, _ = self.server.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(1)
                try:
                    self.heard.append(conn.recv(1024) or b"<connected>")
                except OSError:
                    self.heard.append(b"<connected>")

    def stop(self):
        self.running = False
        self.thread.join()
        self.server.close()
