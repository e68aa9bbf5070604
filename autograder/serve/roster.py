"""Who the course's students are, for the service: whose hand-ins it grades at all.

A hand-in names its student; a student can write any name into the exchange.
The service grades an id only if the course knows it (:func:`known`):

- its gradebook's students (nbgrader's roster: ``nbgrader db student import``);
- the students it has results for, and those a TA took out (who are told so);
- under JupyterHub, the hub's users (the service's API token, with the
  ``list:users`` scope ``hub/jupyterhub_config.py`` grants it), asked at most
  every :data:`HUB_EVERY` seconds.

A student who is a user of the machine is graded from a folder they own
whatever this says (:func:`autograder.serve.inbound.owner_refusal`).
"""

from __future__ import annotations

import json
import logging
import os
import time
import urllib.parse
import urllib.request

from autograder.pipeline.course import students
from autograder.pipeline.course.assignment import Assignment
from autograder.pipeline.course.students import plain_id

_log = logging.getLogger(__name__)

HUB_EVERY = 10.0  #: seconds between asking the hub for its users (a new one is enrolled then)
HUB_TIMEOUT = 5.0  #: seconds one request to the hub may take
HUB_PAGE = 200  #: users asked for per request (JupyterHub's largest page by default)
MAX_HUB_BYTES = 16 * 2**20  #: bytes of one answer read, at most
MAX_HUB_USERS = 100_000  #: users taken from the hub, at most


def hub_users(url: str, token: str) -> set[str]:
    """The names of the hub's users, page by page (``GET {url}/users``).

    url: the hub's API (``JUPYTERHUB_API_URL``); token: the service's own
    (``JUPYTERHUB_API_TOKEN``). OSError or ValueError when the hub cannot say.
    """
    found: set[str] = set()
    offset = 0
    while len(found) < MAX_HUB_USERS:
        query = urllib.parse.urlencode({"offset": offset, "limit": HUB_PAGE})
        request = urllib.request.Request(
            f"{url.rstrip('/')}/users?{query}", headers={"Authorization": f"token {token}"}
        )
        with urllib.request.urlopen(request, timeout=HUB_TIMEOUT) as answer:  # noqa: S310
            users = json.loads(answer.read(MAX_HUB_BYTES + 1)[:MAX_HUB_BYTES])
        if isinstance(users, dict):  # the paginated form: {"items": [...], "_pagination": ...}
            users = users.get("items", [])
        if not isinstance(users, list):
            raise ValueError("the hub's answer is no list of users")
        names = {u.get("name") for u in users if isinstance(u, dict)}
        found |= {n for n in names if isinstance(n, str) and plain_id(n)}
        if len(users) < HUB_PAGE:
            return found
        offset += len(users)
    return found


class Roster:
    """The ids the course knows, read again when asked (:meth:`known`)."""

    def __init__(self, assignment: Assignment) -> None:
        self.assignment = assignment
        self.hub: set[str] = set()
        self.hub_asked = 0.0  # time.monotonic() of the last question to the hub
        self.gradebook: set[str] = set()

    def known(self, also: set[str]) -> set[str]:
        """The gradebook's students, the hub's users and ``also`` (results, removals).

        A gradebook or hub that cannot be read now keeps the ids it gave last.
        """
        try:
            self.gradebook = students.in_gradebook(self.assignment)
        except Exception as error:  # a gradebook locked or half-written: the last good one
            _log.debug(f"the gradebook's students were not read: {error}")
        url, token = os.environ.get("JUPYTERHUB_API_URL"), os.environ.get("JUPYTERHUB_API_TOKEN")
        if url and token and time.monotonic() - self.hub_asked > HUB_EVERY:
            self.hub_asked = time.monotonic()
            try:
                self.hub = hub_users(url, token)
            except (OSError, ValueError) as error:
                _log.warning(f"warning: the hub did not say who its users are: {error}")
        return self.gradebook | self.hub | also
