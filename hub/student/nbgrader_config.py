"""nbgrader's settings for every user's JupyterLab on the course's hub.

The *Assignments* tab fetches from and submits to this exchange, for this course;
the hub passes both in (``hub/jupyterhub_config.py``: the id from course_config.py).
"""

import os

c = get_config()  # noqa: F821 -- provided by traitlets when it loads the file
c.CourseDirectory.course_id = os.environ["NBGRADER_COURSE_ID"]
c.Exchange.root = os.environ.get("NBGRADER_EXCHANGE", "/srv/nbgrader/exchange")
