"""Operator families. Each family is one small module; most operators are compositions of
the two primitives in :mod:`dstream.streams.transformed`."""
