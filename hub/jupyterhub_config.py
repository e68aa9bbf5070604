"""A JupyterHub for this course: everyone a Linux user, nbgrader's exchange shared.

``make hub`` starts it on 127.0.0.1 (port 8000, or ``HUB_PORT``) for a trial on
this machine; run it as root, since the hub starts each user's server as that
user. Users log in with their Linux password (PAM). Each user's JupyterLab has
nbgrader's *Assignments* tab, set up by ``hub/student/nbgrader_config.py``: the
course id and the exchange, both read here from the course's settings
(``course_config.py``; ``NBGRADER_COURSE`` names another course folder). The
exchange must be a folder students can reach (``NBGRADER_EXCHANGE``, as
docs/instructors.md says: ``/srv/nbgrader/exchange`` made with ``chmod ugo+rw``).
``tests/lab/test_hub.py`` starts the hub the same way. For a real deployment, see
docs/instructors.md.
"""

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
COURSE = Path(os.environ.get("NBGRADER_COURSE", HERE.parent))
ENV = Path(sys.prefix)  # the course's environment: every user's server runs from it
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
c.Spawner.cmd = [str(ENV / "bin" / "jupyterhub-singleuser")]
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

c.Spawner.environment = {
    "JUPYTER_CONFIG_PATH": str(HERE / "student"),
    "NBGRADER_COURSE_ID": COURSE_ID,
    "NBGRADER_EXCHANGE": str(EXCHANGE),
}
