"""dstream measured with its peers' own yardsticks: PySpark's streaming test suite."""
