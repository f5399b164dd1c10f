"""Job generation per interval, the event loop, listeners' delivery and failure reporting.
The scheduler sees the DStream API only through ``DStreamGraph.generate_jobs``."""
