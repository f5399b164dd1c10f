"""``python -m dstream``: the ``dstream`` command (see :mod:`dstream.cli`)."""

import sys

from dstream.cli import main

sys.exit(main())
