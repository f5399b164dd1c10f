"""``python -m bench.peers``: the peers harness (bench/peers/harness.py, #62)."""

import sys

from bench.peers.harness import main

sys.exit(main())
