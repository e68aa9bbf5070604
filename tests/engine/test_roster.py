"""Does the service know the course's students from the hub too, page by page, and keep
the last answer when the hub cannot say?"""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import pytest

from autograder.serve import roster

USERS = [f"student{n}" for n in range(450)] + ["../not-an-id"]


class Hub(BaseHTTPRequestHandler):
    """JupyterHub's ``GET /users`` on the loopback: pages of ``limit``, a token required."""

    asked: list[dict] = []
    paginated = False

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        query = {k: int(v[0]) for k, v in parse_qs(urlparse(self.path).query).items()}
        Hub.asked.append(query)
        if self.headers.get("Authorization") != "token good":
            self.send_response(403)
            self.end_headers()
            return
        page = [{"name": n, "kind": "user"} for n in USERS[query["offset"] :][: query["limit"]]]
        body = json.dumps({"items": page} if Hub.paginated else page).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def hub():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Hub)
    # a short poll: shutdown() waits for the server's next look (0.5 s by default)
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    Hub.asked, Hub.paginated = [], False
    yield f"http://127.0.0.1:{server.server_port}/hub/api"
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("paginated", [False, True])
def test_every_page_of_the_hubs_users_is_read(hub, paginated):
    Hub.paginated = paginated
    found = roster.hub_users(hub, "good")
    assert found == set(USERS[:-1])  # a name that is no plain id is no student
    assert [q["offset"] for q in Hub.asked] == [0, 200, 400]


def test_a_hub_that_cannot_say_keeps_the_last_answer(hub, monkeypatch, tmp_path):
    from autograder.pipeline.course import students

    monkeypatch.setattr(students, "in_gradebook", lambda a: {"enrolled"})
    monkeypatch.setenv("JUPYTERHUB_API_URL", hub)
    monkeypatch.setenv("JUPYTERHUB_API_TOKEN", "good")
    known = roster.Roster(assignment=None)  # type: ignore[arg-type]
    assert known.known({"graded"}) == set(USERS[:-1]) | {"enrolled", "graded"}
    monkeypatch.setenv("JUPYTERHUB_API_TOKEN", "revoked")
    known.hub_asked = 0.0
    assert "student7" in known.known(set())  # a 403 now: the hub's users as last said
    asked = len(Hub.asked)
    known.known(set())  # asked again only after HUB_EVERY seconds
    assert len(Hub.asked) == asked
    with pytest.raises(OSError):
        roster.hub_users(hub, "revoked")
