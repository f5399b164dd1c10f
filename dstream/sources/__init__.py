"""Input streams: queues of RDDs, directories of files, sockets and a deterministic rate
source."""
