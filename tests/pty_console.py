"""A process on a pseudo-terminal, for tests that drive an interactive console
(``python -m dstream shell``) as a person would: type a line, wait for what it prints."""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import time

__all__ = ["Console"]


class Console:
    """A process on a pseudo-terminal: type lines, wait for output."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.master, slave = pty.openpty()
        self.proc = subprocess.Popen(
            argv, stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True
        )
        os.close(slave)
        self.text = ""  # printed and not yet matched by expect()
        self.transcript = ""  # everything printed so far

    def expect(self, pattern: str, timeout_s: float = 120) -> re.Match[str]:
        deadline = time.monotonic() + timeout_s
        while True:
            match = re.search(pattern, self.text)
            if match is not None:
                self.text = self.text[match.end() :]
                return match
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"no {pattern!r} in {self.text[-2000:]!r}"
            ready, _, _ = select.select([self.master], [], [], remaining)
            if ready:
                try:
                    chunk = os.read(self.master, 65536)
                except OSError:  # the process closed the terminal
                    chunk = b""
                assert chunk, f"the console ended before {pattern!r}: {self.text[-2000:]!r}"
                text = chunk.decode(errors="replace").replace("\r\n", "\n")
                self.text += text
                self.transcript += text

    def send(self, line: str) -> None:
        os.write(self.master, line.encode() + b"\n")
