"""A JupyterHub for this course: everyone a Linux user, nbgrader's exchange shared.

``make hub`` starts it on 127.0.0.1 (port 8000, or ``HUB_PORT``) for a trial on
this machine; run it as root, since the hub starts each user's server as that
user. Users log in with their Linux password (PAM). Each user's server runs from
the users' environment (``HUB_ENV``, which ``make hub-env`` builds outside every
home and course folder: students run it without reading the instructor's
course); the hub refuses to start if another user could not run it. Its
JupyterLab has nbgrader's *Assignments* tab, set up by
``hub/student/nbgrader_config.py`` (copied into that environment): the course id
and the exchange, both read here from the course's settings
(``course_config.py``; ``NBGRADER_COURSE`` names another course folder). The
exchange must be a folder students can reach (``NBGRADER_EXCHANGE``, as
docs/instructors.md says: ``/srv/nbgrader/exchange`` made with ``chmod ugo+rw``).
The hub runs the course's service (``python -m autograder serve``, docs/graded-on-submit.md)
as a managed service unless ``HUB_SERVE=0``: students' hand-ins are graded as they arrive.
``tests/lab/test_hub.py`` starts the hub the same way. For a real deployment, see
docs/instructors.md.
"""

import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
COURSE = Path(os.environ.get("NBGRADER_COURSE", HERE.parent))
ENV = Path(sys.prefix)  # the course's environment: the hub and its proxy run from it
STATE = Path(os.environ.get("HUB_STATE", HERE.parent / ".hub"))
STATE.mkdir(parents=True, exist_ok=True)

c = get_config()  # noqa: F821 -- provided by traitlets when it loads the file
c.JupyterHub.ip = "127.0.0.1"
c.JupyterHub.port = int(os.environ.get("HUB_PORT", "8000"))
c.JupyterHub.hub_port = int(os.environ.get("HUB_API_PORT", "8081"))
c.JupyterHub.db_url = f"sqlite:///{STATE / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(STATE / "jupyterhub_cookie_secret")
c.ConfigurableHTTPProxy.command = [
    str(ENV / "node" / "node_modules" / ".bin" / "configurable-http-proxy")
]
c.ConfigurableHTTPProxy.pid_file = str(STATE / "proxy.pid")
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{os.environ.get('HUB_PROXY_API_PORT', '8001')}"
c.JupyterHub.authenticator_class = "pam"
c.Authenticator.allow_all = True
c.Spawner.default_url = "/lab"
c.Spawner.http_timeout = 120
c.Spawner.start_timeout = 120
# The course id as the course's own settings give it (read here, by the hub: the
# course folder is the instructor's, and students cannot read it).
sys.path.insert(0, str(HERE.parent))
from autograder.pipeline.course.assignment import load_config  # noqa: E402

SETTINGS = load_config(COURSE)
COURSE_ID = SETTINGS.CourseDirectory.course_id
EXCHANGE = Path(SETTINGS.Exchange.root)
if EXCHANGE.resolve().is_relative_to(COURSE.resolve()):
    print(
        f"warning: the exchange {EXCHANGE} is inside the course folder, which students must "
        "not read: set NBGRADER_EXCHANGE=/srv/nbgrader/exchange (docs/instructors.md)",
        file=sys.stderr,
    )


def why_students_cannot_run(users_env: Path) -> str | None:
    """Why a student's server could not start from ``users_env`` (None when it can).

    Run as a user with no rights of their own (``nobody``), as root can: a
    folder on the way that only its owner may enter (a home folder, the course)
    shows here, not as a 500 at a student's first login.
    """
    server = users_env / "bin" / "jupyterhub-singleuser"
    if not server.is_file():
        return f"it has no {server.name}: build it with `make hub-env HUB_ENV={users_env}`"
    if users_env.resolve().is_relative_to(COURSE.resolve()):
        return "it is inside the course folder, which students must not read"
    if os.geteuid() != 0:
        return None  # the hub can start no one else's server anyway
    tried = subprocess.run(
        ["runuser", "-u", "nobody", "--", str(users_env / "bin" / "python"), "-c",
         "import jupyterhub, nbgrader"],
        capture_output=True, text=True, timeout=120, cwd="/",
    )  # fmt: skip
    if tried.returncode != 0:
        said = (tried.stderr.strip().splitlines() or ["no reason given"])[-1]
        return f"another user cannot run it ({said}): build it with `make hub-env`"
    return None


USERS_ENV = Path(os.environ.get("HUB_ENV", "/opt/tiny-gpt-08/hub-env"))  # the Makefile's default
problem = why_students_cannot_run(USERS_ENV)
if problem:
    sys.exit(f"error: the users' environment {USERS_ENV}: {problem}")
c.Spawner.cmd = [str(USERS_ENV / "bin" / "jupyterhub-singleuser")]
c.Spawner.environment = {
    "NBGRADER_COURSE_ID": COURSE_ID,
    "NBGRADER_EXCHANGE": str(EXCHANGE),
}

# Graded on submit: the course's own service (`python -m autograder serve`), which the hub
# starts with itself, restarts if it exits, and stops with itself. It runs as the hub does
# (the instructor), in the course folder, from the course's environment: it grades each
# hand-in in the exchange and returns its page there, for the Assignments tab's
# "Fetch Feedback". HUB_SERVE=0 leaves it out (grading then waits for the TA's batch).
if os.environ.get("HUB_SERVE", "1") != "0":
    c.JupyterHub.services = [
        {
            "name": "autograder",
            "command": [sys.executable, "-m", "autograder", "serve", "--course", str(COURSE)],
            "cwd": str(COURSE),
            "environment": {"NBGRADER_EXCHANGE": str(EXCHANGE)},
        }
    ]
    # It grades only the course's students: the hub's users are among them, so it may
    # list them (their names, nothing else).
    c.JupyterHub.load_roles = [
        {"name": "autograder-roster", "scopes": ["list:users"], "services": ["autograder"]}
    ]
