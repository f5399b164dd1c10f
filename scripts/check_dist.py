"""The release's two files, checked before anything is published (make clean-install-smoke):

    python scripts/check_dist.py DIST_DIR [--no-java-build]

DIST_DIR holds one sdist and the wheel built FROM it (``uv build``'s default). Checks that

- ``twine check --strict`` accepts both (the metadata and the README PyPI would render);
- the sdist carries every tracked file of ``dstream/`` and the JVM shim's sources and build
  script, and no jar built on this machine;
- the wheel holds every tracked file of ``dstream/`` and the shim jar, and nothing else;
- the metadata: the SPDX licence, ``Typing :: Typed``, a Development Status, no upper cap on
  Python and no exact pin in any requirement (the pins are requirements.lock's);
- with ``--no-java-build``: building a wheel from the sdist on a PATH without ``javac`` and
  ``jar`` fails, naming the JDK and the way to build without the shim (never a wheel that
  silently lacks it).

Every failure is printed, one line each; the exit status is 1 if any.
"""

from __future__ import annotations

import argparse
import email.parser
import os
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHIM_JAR = "dstream/jars/dstream-shim.jar"
JAVA_TOOLS = ("javac", "jar", "java")
NO_JDK_MESSAGE = "it needs a JDK 17+ with javac and jar on PATH"


def tracked(*paths: str) -> set[str]:
    out = subprocess.run(
        ["git", "ls-files", "--", *paths], cwd=REPO, check=True, capture_output=True, text=True
    ).stdout
    return {line for line in out.splitlines() if line}


def sdist_problems(sdist: Path) -> list[str]:
    with tarfile.open(sdist) as tar:
        names = {m.name.split("/", 1)[1] for m in tar.getmembers() if "/" in m.name}
    problems = []
    needed = tracked("dstream", "jvm-shim/shim/src") | {
        "jvm-shim/build.sh",
        "setup.py",
        "pyproject.toml",
        "MANIFEST.in",
        "LICENSE",
        "README.md",
    }
    for name in sorted(needed - names):
        problems.append(f"{sdist.name}: {name} is missing (MANIFEST.in)")
    for name in sorted(n for n in names if n.startswith("dstream/jars/")):
        problems.append(
            f"{sdist.name}: carries the built {name}; the sdist builds it (MANIFEST.in)"
        )
    return problems


def wheel_problems(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as whl:
        names = set(whl.namelist())
        meta_name = next(n for n in names if n.endswith(".dist-info/METADATA"))
        metadata = email.parser.Parser().parsestr(whl.read(meta_name).decode())
    package = {n for n in names if n.startswith("dstream/")}
    expected = tracked("dstream") | {SHIM_JAR}
    problems = [f"{wheel.name}: {n} is missing" for n in sorted(expected - package)]
    problems += [
        f"{wheel.name}: {n} is not a file of the package" for n in sorted(package - expected)
    ]
    if metadata.get("License-Expression") != "Apache-2.0":
        problems.append(
            f"{wheel.name}: License-Expression is {metadata.get('License-Expression')!r}"
        )
    classifiers = metadata.get_all("Classifier") or []
    if "Typing :: Typed" not in classifiers:
        problems.append(f"{wheel.name}: no 'Typing :: Typed' classifier")
    if not any(c.startswith("Development Status :: ") for c in classifiers):
        problems.append(f"{wheel.name}: no 'Development Status' classifier")
    if any(c.startswith("License :: ") for c in classifiers):
        problems.append(f"{wheel.name}: a License classifier beside License-Expression")
    if "<" in (metadata.get("Requires-Python") or ""):
        problems.append(
            f"{wheel.name}: Requires-Python {metadata.get('Requires-Python')!r} caps it"
        )
    for requirement in metadata.get_all("Requires-Dist") or []:
        if "==" in requirement.split(";")[0]:
            problems.append(
                f"{wheel.name}: exact pin {requirement!r} (pins go in requirements.lock)"
            )
    return problems


def twine_problems(files: list[Path]) -> list[str]:
    twine = [sys.executable, "-m", "twine", "check", "--strict", *map(str, files)]
    done = subprocess.run(twine, capture_output=True, text=True, check=False)
    if done.returncode == 0:
        return []
    return [f"twine check --strict: {line}" for line in (done.stdout + done.stderr).splitlines()]


def no_java_problems(sdist: Path) -> list[str]:
    """Build a wheel from the sdist on a PATH where the JDK's tools are missing."""
    uv = Path(sys.executable).with_name("uv")
    with tempfile.TemporaryDirectory(prefix="dstream-nojava-") as tmp:
        bin_dir = Path(tmp) / "bin"
        bin_dir.mkdir()
        for directory in os.environ["PATH"].split(os.pathsep):
            if not os.path.isdir(directory):
                continue
            for entry in os.scandir(directory):
                link = bin_dir / entry.name
                if entry.name not in JAVA_TOOLS and not link.exists():
                    link.symlink_to(entry.path)
        env = {**os.environ, "PATH": str(bin_dir)}
        env.pop("JAVA_HOME", None)
        env.pop("DSTREAM_BUILD_WITHOUT_SHIM", None)
        build = [
            str(uv),
            "build",
            "--offline",
            "--python",
            sys.executable,
            "--wheel",
            "--out-dir",
            tmp,
            str(sdist),
        ]
        done = subprocess.run(build, env=env, capture_output=True, text=True, check=False)
        built = list(Path(tmp).glob("*.whl"))
    output = done.stdout + done.stderr
    if done.returncode == 0 or built:
        return [f"{sdist.name}: a wheel was built without a JDK ({[w.name for w in built]})"]
    if NO_JDK_MESSAGE not in output or "DSTREAM_BUILD_WITHOUT_SHIM=1" not in output:
        return [
            f"{sdist.name}: the build without a JDK failed without saying why: {output[-2000:]}"
        ]
    return []


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dist", type=Path)
    parser.add_argument("--no-java-build", action="store_true")
    args = parser.parse_args()
    sdists = sorted(args.dist.glob("*.tar.gz"))
    wheels = sorted(args.dist.glob("*.whl"))
    if len(sdists) != 1 or len(wheels) != 1:
        print(f"check_dist: {args.dist} must hold one sdist and one wheel: {sdists + wheels}")
        return 1
    problems = twine_problems(sdists + wheels)
    problems += sdist_problems(sdists[0]) + wheel_problems(wheels[0])
    if args.no_java_build:
        problems += no_java_problems(sdists[0])
    for problem in problems:
        print(f"check_dist: {problem}")
    if not problems:
        print(f"check_dist: {sdists[0].name} and {wheels[0].name} are fit to publish")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
