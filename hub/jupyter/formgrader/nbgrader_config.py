"""nbgrader in the formgrader service of the trial hub (hub/jupyterhub_config.py): the shared exchange.

The course itself (its root and course id) comes from nbgrader_config.py in the course folder, the service's
working directory, which tools/nbgrader_course.py (`make assignments`) writes.
"""

import os

c = get_config()  # noqa: F821 - nbgrader's config loader defines it

c.Exchange.root = os.environ["MHA_HUB_EXCHANGE"]
