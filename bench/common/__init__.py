"""Helpers every benchmark shares: the SparkContext they start, and the file generator."""
