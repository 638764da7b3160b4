"""nbgrader in a user's JupyterLab on the trial hub (hub/jupyterhub_config.py): the shared exchange and the course.

Every server of the trial hub runs as the same system user, so nbgrader cannot tell the students apart by it;
the student is the hub user the server belongs to. (On Zero to JupyterHub every pod runs as `jovyan`, and nbgrader
takes JUPYTERHUB_USER there by itself.)
"""

import os

c = get_config()  # noqa: F821 - nbgrader's config loader defines it

c.Exchange.root = os.environ["MHA_HUB_EXCHANGE"]
c.CourseDirectory.course_id = "mha-notebooks"
c.CourseDirectory.student_id = os.environ["JUPYTERHUB_USER"]
