"""One program per system for bench/peers (#62), each a script run in its own process (the
peers in build/peers-venv, whose packages differ from this project's), reading the watched
directory the harness writes and printing its results on stdout, one line each:

    g <event second> <records containing the pattern> <newest event time ms>
    t <key> <running total> <newest event time ms>

A ``g`` line is a count over part of the second's records (the harness adds them up), except
for systems the harness marks as upserting (they print the second's count so far); a ``t``
line is the key's total so far. The harness stamps each line with the time it read it.
Common arguments: ``--workload {grep,total} --input DIR --interval-ms MS --parallelism N
--checkpoint-dir DIR --checkpoint-ms MS`` (0: checkpoints off, where the system allows).
"""
