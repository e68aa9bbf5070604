"""nbgrader's settings for every user's JupyterLab on the course's hub.

The *Assignments* tab fetches from and submits to this exchange, for this course.
"""

import os

c = get_config()  # noqa: F821 -- provided by traitlets when it loads the file
c.CourseDirectory.course_id = "tiny-gpt-08"
c.Exchange.root = os.environ.get("NBGRADER_EXCHANGE", "/srv/nbgrader/exchange")
