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

``HUB_EXCHANGE=ngshare`` starts the hub as Zero to JupyterHub runs one: students
share no filesystem with each other or the instructor, every server runs as one
Unix user (``HUB_SHARED_USER``, ``jovyan``), each in its own bubblewrap with its
own home under ``HUB_HOMES`` (``hub/isolated_spawner.py``), and the exchange is
ngshare's service (``hub/ngshare/run.py``, from its own environment,
``NGSHARE_ENV``, on 127.0.0.1:``HUB_NGSHARE_PORT``): no exchange folder exists.
The course's service grades through it and enrols the hub's users in it; the
instructor is ``HUB_INSTRUCTOR`` (``instructor``). ``HUB_AUTH=dummy`` logs users
in with one shared password, ``HUB_DUMMY_PASSWORD`` (for tests: never on a real
hub); the default is PAM.
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
EXCHANGE_KIND = os.environ.get("HUB_EXCHANGE", "folder")
if EXCHANGE_KIND not in ("folder", "ngshare"):
    sys.exit(f"error: HUB_EXCHANGE={EXCHANGE_KIND}: folder (the default) or ngshare")
INSTRUCTOR = os.environ.get("HUB_INSTRUCTOR") or "instructor"
if os.environ.get("HUB_AUTH", "pam") == "dummy":  # JupyterHub's shared-password authenticator
    if len(os.environ.get("HUB_DUMMY_PASSWORD", "")) < 8:
        sys.exit("error: HUB_AUTH=dummy needs HUB_DUMMY_PASSWORD, of 8 characters or more")
    c.JupyterHub.authenticator_class = "shared-password"
    c.SharedPasswordAuthenticator.user_password = os.environ["HUB_DUMMY_PASSWORD"]
else:
    c.JupyterHub.authenticator_class = "pam"
c.Authenticator.allow_all = True
# ngshare knows a service's token as a user of the service's name (and the course's
# service is one of its admins): no one logs in under those names.
c.Authenticator.blocked_users = {"autograder", "ngshare"}
c.Spawner.default_url = "/lab"
c.Spawner.http_timeout = 120
c.Spawner.start_timeout = 120
# The course id as the course's own settings give it (read here, by the hub: the
# course folder is the instructor's, and students cannot read it).
sys.path.insert(0, str(HERE.parent))
from autograder.pipeline.course.assignment import load_config  # noqa: E402

SETTINGS = load_config(COURSE)
COURSE_ID = SETTINGS.CourseDirectory.course_id
EXCHANGE = Path(SETTINGS.Exchange.get("root") or "/srv/nbgrader/exchange")  # nbgrader's default
if EXCHANGE_KIND == "folder" and EXCHANGE.resolve().is_relative_to(COURSE.resolve()):
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
SERVICE_ENV = {"NBGRADER_EXCHANGE": str(EXCHANGE)}
SERVICES = []

if EXCHANGE_KIND == "ngshare":
    # ngshare, from its own environment (make ngshare-env), on the loopback: the
    # students' servers and the course's service reach it there, the browser through
    # the hub's proxy (/services/ngshare/).
    NGSHARE_ENV = Path(os.environ.get("NGSHARE_ENV", "/opt/tiny-gpt-08/ngshare-env"))
    if not (NGSHARE_ENV / "bin" / "python").is_file():
        sys.exit(f"error: no ngshare environment at {NGSHARE_ENV}: build it, make ngshare-env")
    NGSHARE_PORT = int(os.environ.get("HUB_NGSHARE_PORT", "10101"))
    NGSHARE_URL = f"http://127.0.0.1:{NGSHARE_PORT}/services/ngshare"
    NGSHARE_DATA = STATE / "ngshare"
    NGSHARE_DATA.mkdir(mode=0o700, exist_ok=True)
    SERVICES.append(
        {
            "name": "ngshare",
            "url": f"http://127.0.0.1:{NGSHARE_PORT}",
            "command": [
                str(NGSHARE_ENV / "bin" / "python"),
                str(HERE / "ngshare" / "run.py"),
                "--admins",
                "autograder",
                "--database",
                f"sqlite:///{NGSHARE_DATA / 'ngshare.db'}",
                "--storage",
                f"{NGSHARE_DATA / 'files'}/",
            ],  # fmt: skip
        }
    )
    sys.path.insert(0, str(HERE))
    from isolated_spawner import IsolatedSpawner, ensure_user  # noqa: E402

    SHARED_USER = os.environ.get("HUB_SHARED_USER") or "jovyan"
    HOMES = Path(os.environ.get("HUB_HOMES") or "/srv/tiny-gpt-08/homes")
    ensure_user(SHARED_USER)
    HOMES.mkdir(parents=True, exist_ok=True)
    HOMES.chmod(0o711)
    reached = subprocess.run(["runuser", "-u", SHARED_USER, "--", "test", "-x", str(HOMES)])
    if reached.returncode != 0:  # a folder on the way only its owner may enter
        sys.exit(f"error: HUB_HOMES={HOMES}: the servers' user {SHARED_USER} cannot reach it")
    c.JupyterHub.spawner_class = IsolatedSpawner
    c.IsolatedSpawner.shared_user = SHARED_USER
    c.IsolatedSpawner.homes = str(HOMES)
    c.IsolatedSpawner.visible = [str(USERS_ENV)]
    c.Spawner.environment = {"NBGRADER_COURSE_ID": COURSE_ID, "NBGRADER_NGSHARE_URL": NGSHARE_URL}
    # the course's config reads these (course_config.py): ngshare is its exchange
    SERVICE_ENV = {"NBGRADER_NGSHARE_URL": NGSHARE_URL, "HUB_INSTRUCTOR": INSTRUCTOR,
                   "USER": "autograder"}  # fmt: skip

# Graded on submit: the course's own service (`python -m autograder serve`), which the hub
# starts with itself, restarts if it exits, and stops with itself. It runs as the hub does
# (the instructor), in the course folder, from the course's environment: it grades each
# hand-in in the exchange and returns its page there, for the Assignments tab's
# "Fetch Feedback". HUB_SERVE=0 leaves it out (grading then waits for the TA's batch).
if os.environ.get("HUB_SERVE", "1") != "0":
    SERVICES.append(
        {
            "name": "autograder",
            "command": [sys.executable, "-m", "autograder", "serve", "--course", str(COURSE)],
            "cwd": str(COURSE),
            "environment": SERVICE_ENV,
        }
    )
    # It grades only the course's students: the hub's users are among them, so it may
    # list them (their names, nothing else).
    c.JupyterHub.load_roles = [
        {"name": "autograder-roster", "scopes": ["list:users"], "services": ["autograder"]}
    ]
c.JupyterHub.services = SERVICES
