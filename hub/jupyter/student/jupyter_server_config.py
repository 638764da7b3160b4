"""A user's JupyterLab on the trial hub: the Assignments tab (fetch, validate, submit), no formgrader.

The formgrader of the course is a hub service (hub/jupyterhub_config.py), open to the instructor only.
"""

c = get_config()  # noqa: F821 - Jupyter's config loader defines it

c.ServerApp.jpserver_extensions = {
    "nbgrader.server_extensions.formgrader": False,
    "nbgrader.server_extensions.course_list": False,
}
