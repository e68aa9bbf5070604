"""nbgrader's settings for every user's JupyterLab on the course's hub.

``make hub-env`` copies this file into the users' environment
(``$HUB_ENV/etc/jupyter/``), where each user's server finds it.

The *Assignments* tab fetches from and submits to this exchange, for this course;
the hub passes both in, as the course's settings give them (``hub/jupyterhub_config.py``
reads them from course_config.py): nothing is declared here.
"""

import os

c = get_config()  # noqa: F821 -- provided by traitlets when it loads the file
c.CourseDirectory.course_id = os.environ["NBGRADER_COURSE_ID"]
if os.environ.get("NBGRADER_NGSHARE_URL"):  # HUB_EXCHANGE=ngshare: no exchange folder
    from ngshare_exchange import configureExchange

    configureExchange(c, os.environ["NBGRADER_NGSHARE_URL"])
else:
    c.Exchange.root = os.environ["NBGRADER_EXCHANGE"]
