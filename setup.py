"""Only what pyproject.toml cannot say: the JVM shim jar is built when the package is built,
against the jars of the pinned pyspark, and shipped inside the wheel as package data
(dstream/jars/dstream-shim.jar). The sdist carries the shim's sources (MANIFEST.in), so a
wheel built from it is the same as one built from the tree. Without a JDK 17+ the build
fails and says so; ``DSTREAM_BUILD_WITHOUT_SHIM=1`` builds a wheel without the jar instead
(straggler tracking and executor events are then off, and the engine says so at start)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
WITHOUT_SHIM = "DSTREAM_BUILD_WITHOUT_SHIM"


class BuildWithShim(build_py):
    def run(self) -> None:
        if os.environ.get(WITHOUT_SHIM) == "1":
            print(f"dstream: building without the JVM shim jar ({WITHOUT_SHIM}=1)", file=sys.stderr)
        else:
            build_shim()
        super().run()


def build_shim() -> None:
    script = HERE / "jvm-shim" / "build.sh"
    if not script.exists():
        raise SystemExit(
            f"dstream: {script} is missing, so the JVM shim jar cannot be built; build from a "
            "source checkout or from the project's sdist (both carry jvm-shim/), or set "
            f"{WITHOUT_SHIM}=1 to build a wheel without the shim"
        )
    env = {**os.environ, "PY": sys.executable}
    done = subprocess.run(["bash", str(script)], env=env, check=False)
    if done.returncode != 0:
        raise SystemExit(
            "dstream: the JVM shim jar could not be built (jvm-shim/build.sh's error is "
            "above): it needs a JDK 17+ with javac and jar on PATH, e.g. `apt-get install "
            f"openjdk-17-jdk-headless`; or set {WITHOUT_SHIM}=1 to build a wheel without the "
            "shim (straggler tracking and executor events off)"
        )


setup(cmdclass={"build_py": BuildWithShim})
