"""What the engine costs and how it behaves over time: driver overhead, windows, track(),
checkpoints, pipelining, recovery strategies, rescaling, elasticity, live queries and
replay, the chaos run."""
