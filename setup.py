"""Only what pyproject.toml cannot say: the JVM shim jar is built when the package is built,
against the jars of the pinned pyspark, and shipped inside the wheel as package data
(dstream/jars/dstream-shim.jar). Without a JDK the package is built without it, and the engine
says at start that straggler tracking is off and why."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent


class BuildWithShim(build_py):
    def run(self) -> None:
        script = HERE / "jvm-shim" / "build.sh"
        if script.exists():  # absent when building from an sdist without the Java sources
            env = {**os.environ, "PY": sys.executable}
            done = subprocess.run(["bash", str(script)], env=env, check=False)
            if done.returncode != 0:
                required = os.environ.get("DSTREAM_REQUIRE_SHIM") == "1"
                print(
                    "dstream: the JVM shim jar could not be built (a JDK 17+ is needed); "
                    + ("failing: DSTREAM_REQUIRE_SHIM=1" if required else "building without it"),
                    file=sys.stderr,
                )
                if required:
                    raise SystemExit(done.returncode)
        super().run()


setup(cmdclass={"build_py": BuildWithShim})
