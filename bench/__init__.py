"""The benchmarks, in folders by what they measure; run each from the repository root as a
module, e.g. ``.venv/bin/python -m bench.engine.overhead``. bench/README.md has every command
and the numbers measured."""
