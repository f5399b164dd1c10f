"""The project's test and benchmark machinery, kept out of the installed package: real
faults (executor and driver kills, slowed executors), the HDFS mini cluster, a standalone
Spark cluster and the JVM they need. Importable from the repository root (tests and bench/
run from there); ``python -m testbed.hdfs`` and friends start each service by hand.

Users' own streaming tests need only :mod:`dstream.testing.streams` (installed)."""
