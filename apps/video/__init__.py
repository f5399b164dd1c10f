"""The video-distribution monitor (the paper's Conviva port, Sec. 6.3.1): player events, a
seeded generator, per-session state kept with ``track``, metrics by dimension, alerts, ad-hoc
queries, and a plain-Python oracle that computes the same numbers.

Everything here but :mod:`video.queries` is pure Python (no Spark): the streaming program is
``apps/video_monitor.py``. The modules ship to executors by value (the app registers the
package with cloudpickle), and every record that crosses a shuffle or a state snapshot is
built from tuples, ints, strings and bytes only, so executors never import this package.
"""
