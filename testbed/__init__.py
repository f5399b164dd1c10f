"""Real servers and fault injection for dstream's tests, demos and benchmarks.

Nothing here is part of the engine a user installs: these modules start real components on
this machine's loopback interface (an Apache Kafka broker in KRaft mode: ``testbed.kafka``)
and drive failure scenarios against them (``testbed.kafka_faults``).
"""
