"""nbgrader in the formgrader service of the trial hub (hub/jupyterhub_config.py): the shared exchange, and a
collect that takes a submission only from the student it names.

The course itself (its root and course id) comes from nbgrader_config.py in the course folder, the service's
working directory, which tools/nbgrader_course.py (`make assignments`) writes.

A submission's name (student+assignment+time+random) is chosen by the student's own nbgrader, so anybody can put
another student's name on it (`nbgrader submit chNN --CourseDirectory.student_id=alice`). When each student has a
system account of their own (the hub running as root), the file system records who made it: nbgrader's collect
compares that owner with the name, but only warns (CollectApp.check_owner). OwnerCheckedCollect, nbgrader's
collect plugged in through its ExchangeFactory, skips such a submission instead, and never lets it hide the newest
submission that the student did make.
"""

import os
import pwd

from nbgrader.exchange.default.collect import ExchangeCollect

c = get_config()  # noqa: F821 - nbgrader's config loader defines it

c.Exchange.root = os.environ["MHA_HUB_EXCHANGE"]


class OwnerCheckedCollect(ExchangeCollect):
    """nbgrader's file-system collect, keeping only submissions owned by the account of the student they name."""

    def _path_to_record(self, path):
        record = super()._path_to_record(path)
        try:
            record["owner"] = pwd.getpwuid(os.stat(path).st_uid).pw_name
        except KeyError:  # an account that no longer exists
            record["owner"] = None
        return record

    def _sort_by_timestamp(self, records):
        # nbgrader takes the first of these, the newest: the newest that the named student made, if any
        made_by_student = [record for record in records if record["owner"] == record["username"]]
        for record in records:
            if record["owner"] != record["username"]:
                self.log.error("Skipping %s: it names %s, but %s submitted it", record["filename"],
                               record["username"], record["owner"])
        return super()._sort_by_timestamp(made_by_student or records)

    def copy_files(self):
        self.src_records = [record for record in self.src_records if record["owner"] == record["username"]]
        super().copy_files()


if os.geteuid() == 0:  # each student has an account (hub/jupyterhub_config.py); without root, nobody has
    c.ExchangeFactory.collect = OwnerCheckedCollect
