"""A streaming application script run inside this process, as ``python APP.py ARGS`` would
run it, on a thread of its own: the shell opens a console beside it, replay moves its clock.

The script runs as ``__main__`` with ``sys.argv`` and ``sys.path[0]`` set as Python sets them.
Signal handlers it installs are ignored (only the main thread may install them; the console
owns Ctrl-C and Ctrl-D). Whatever it raises is kept and re-raised to the caller.
"""

from __future__ import annotations

import contextvars
import logging
import os
import runpy
import signal
import sys
import threading
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dstream.context import StreamingContext

__all__ = ["Program", "ProgramError"]

log = logging.getLogger(__name__)


class ProgramError(RuntimeError):
    """The application script failed, or ended without starting a StreamingContext."""


class Program:
    def __init__(self, path: str, args: list[str], command: str = "run") -> None:
        script = Path(path)
        if not script.is_file():
            raise ProgramError(
                f"{path} is not a file; give the path of a streaming application script, "
                f"e.g. dstream {command} examples/windowed_counts.py"
            )
        self.path = script.resolve()
        self.args = list(args)
        self.error: BaseException | None = None
        self._thread: threading.Thread | None = None

    def start(self, context: contextvars.Context | None = None) -> None:
        """Run the script on its own thread (in ``context``, e.g. one with a replay clock)."""
        # Import PySpark and the engine here first: two threads importing pyspark at once can
        # see its package half-initialised (pyspark.rdd is an alias it registers on import).
        import dstream.context  # noqa: F401

        sys.argv = [str(self.path), *self.args]
        sys.path.insert(0, str(self.path.parent))
        run = (context or contextvars.copy_context()).run
        self._thread = threading.Thread(
            target=run, args=(self._main,), name="dstream-program", daemon=True
        )
        self._thread.start()

    def _main(self) -> None:
        with _signals_ignored_off_the_main_thread():
            try:
                runpy.run_path(str(self.path), run_name="__main__")
            except SystemExit as exc:
                if exc.code not in (0, None):
                    self.error = exc
            except BaseException as exc:
                self.error = exc

    def exit_status(self) -> int:
        """The status the command exits with once the program ended, as ``python APP.py``
        would: 0; a ``sys.exit`` code (a message printed to stderr); or 1 with the error
        printed once to stderr as Python prints an uncaught one, from the program's own
        frames on (not the command's)."""
        error = self.error
        if error is None:
            return 0
        if isinstance(error, SystemExit):
            if isinstance(error.code, int):
                return error.code
            print(error.code, file=sys.stderr)
            return 1
        tb = error.__traceback__
        while tb is not None and Path(tb.tb_frame.f_code.co_filename) != self.path:
            tb = tb.tb_next
        # No frame of the program's (a syntax error): the error alone, as Python shows it.
        sys.stderr.write("".join(traceback.format_exception(type(error), error, tb)))
        sys.stderr.flush()
        return 1

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def join(self, timeout_s: float | None = None) -> None:
        if self._thread is not None:
            self._thread.join(timeout_s)

    def wait_for_context(self, timeout_s: float = 300) -> StreamingContext:
        """The StreamingContext the script started (it must call ``ssc.start()``)."""
        from dstream.context import StreamingContext

        waited = threading.Event()
        for _ in range(int(timeout_s / 0.05)):
            ssc = StreamingContext.getActive()
            if ssc is not None:
                return ssc
            if not self.running:
                break
            waited.wait(0.05)  # polling another thread's progress: there is no event to wait on
        if self.error is not None:
            raise ProgramError(f"{self.path.name} failed: {self.error!r}") from self.error
        how = "ended" if not self.running else f"ran for {timeout_s} s"
        raise ProgramError(
            f"{self.path.name} {how} without starting a StreamingContext; the script must "
            "call ssc.start()"
        )


class _signals_ignored_off_the_main_thread:  # noqa: N801 - used as a context manager
    """signal.signal from a thread other than the main one is ignored (logged), not an
    error: the program's handlers make no sense under a console that owns the terminal."""

    def __enter__(self) -> None:
        self._original: Callable[..., Any] = signal.signal

        def install(signum: int, handler: Any) -> Any:
            if threading.current_thread() is threading.main_thread():
                return self._original(signum, handler)
            log.info("%s: ignored its handler for signal %d", os.path.basename(sys.argv[0]), signum)
            return signal.getsignal(signum)

        signal.signal = install  # type: ignore[assignment]

    def __exit__(self, *exc: object) -> None:
        signal.signal = self._original
