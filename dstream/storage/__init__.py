"""Formats and file systems: the metadata journal and its typed record, driver ownership
(epochs, leases), state checkpoints, track() snapshots, exactly-once output commits, local
and Hadoop file systems and their atomic publish, files reached from tasks (local, WebHDFS).

A regular package, not a namespace one: dstream shipped as a zip (``--py-files``) is
imported by zipimport, which finds no namespace packages."""
