"""nbgrader in a user's JupyterLab on the trial hub (hub/jupyterhub_config.py): the shared exchange and the course.

Every server of the trial hub runs as the same system user, so nbgrader cannot tell the students apart by it;
the student is the hub user the server belongs to. (On Zero to JupyterHub every pod runs as `jovyan`, and nbgrader
takes JUPYTERHUB_USER there by itself.)

A private submission: nbgrader's submit leaves the submission's folder in the exchange open to everyone (mode 777,
its files 644; only its random name hides it). PrivateSubmit, nbgrader's submit plugged in through its
ExchangeFactory, then closes it to its owner (folder 700, files 600), so no other student can open it even knowing
its name. The formgrader collects it as root (hub/jupyterhub_config.py), which may read it.
"""

import os
import stat

from nbgrader.exchange.default.submit import ExchangeSubmit

c = get_config()  # noqa: F821 - nbgrader's config loader defines it

c.Exchange.root = os.environ["MHA_HUB_EXCHANGE"]
c.CourseDirectory.course_id = "mha-notebooks"
c.CourseDirectory.student_id = os.environ["JUPYTERHUB_USER"]

PRIVATE_DIR = stat.S_IRWXU  # 0o700
PRIVATE_FILE = stat.S_IRUSR | stat.S_IWUSR  # 0o600


class PrivateSubmit(ExchangeSubmit):
    """nbgrader's file-system submit, whose submission in the exchange only its owner (and root) can open."""

    def copy_files(self):
        super().copy_files()
        submission = os.path.join(self.inbound_path, self.assignment_filename)
        for folder, _, files in os.walk(submission):
            os.chmod(folder, PRIVATE_DIR)
            for name in files:
                os.chmod(os.path.join(folder, name), PRIVATE_FILE)


c.ExchangeFactory.submit = PrivateSubmit
