"""Input paths: exact file paths against a comma-joined list, Kafka against Structured
Streaming's source, and the replicated receiver."""
