"""The project's test and benchmark machinery, kept out of the installed package: real
components started on this machine's loopback interface (the HDFS mini cluster, an Apache
Kafka broker in KRaft mode, a standalone Spark cluster, and the JVM they need) and real
faults driven against them (executor and driver kills, slowed executors, chaos runs).
Importable from the repository root (tests and bench/ run from there); ``python -m
testbed.hdfs``, ``python -m testbed.kafka`` and friends start each service by hand.

Users' own streaming tests need only :mod:`dstream.testing.streams` (installed)."""
