"""Travel-time estimation from sparse GPS observations (the paper's Mobile Millennium port).

Pure model code, no Spark: the streaming program is ``apps/traffic_em.py``.

- :mod:`traffic.network`: a synthetic city (a grid of a few thousand links with lengths and
  speed limits) and its ground truth, Gamma travel times that change with the time of day
  (a rush hour on some corridors, a little different every day).
- :mod:`traffic.observations`: one observation (a vehicle's trip between two GPS fixes,
  map-matched), its text format and the share of each link it covers.
- :mod:`traffic.generate`: vehicles on shortest paths reporting a fix every 60 s; "today" as
  a stream of intervals, past days as historical files.
- :mod:`traffic.estep`: how an observation's duration splits over its links, sampled
  exactly (Gibbs over neighbouring links with the exact two-gamma conditional).
- :mod:`traffic.mstep`: the weighted maximum-likelihood Gamma fit with a speed-limit prior.
- :mod:`traffic.em`: online EM (warm-started, sliding window plus history) and batch EM.
- :mod:`traffic.metrics` and :mod:`traffic.queries`: accuracy against the ground truth, and
  what the shell asks of the estimates (slowest links, a route's travel time).
"""
