"""dstream beside its peers: PySpark's own streaming test suite (pyspark_suite.py), and the
engines a Python user would pick instead, PyFlink and Bytewax, on the same input (harness.py,
``python -m bench.peers``, #62)."""
