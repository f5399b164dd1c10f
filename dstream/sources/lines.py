"""Bytes to text lines as Spark's ``SocketReceiver`` reads them (pure, no Spark).

Spark reads a socket through Java's ``BufferedReader(InputStreamReader(in, UTF_8))``:

* malformed UTF-8 becomes U+FFFD (the decoder's REPLACE action), one per maximal invalid
  subsequence, as Python's ``errors="replace"`` does; the receiver never fails on bad bytes;
* ``readLine`` ends a line at ``\\n``, ``\\r`` or ``\\r\\n`` and strips the terminator;
* at the end of the stream, text after the last terminator is a last line (an empty rest is
  not a line).

:class:`LineDecoder` does the same on chunks of any size, so a ``\\r\\n`` or a multi-byte
character split between two ``recv`` calls gives the same lines as one read.
"""

from __future__ import annotations

import codecs
import re

__all__ = ["LineDecoder"]

_TERMINATOR = re.compile(r"\r\n|\r|\n")


class LineDecoder:
    """Feed it bytes as they arrive; it returns the lines they complete.

    >>> d = LineDecoder()
    >>> d.feed(b"a\\r"), d.feed(b"\\nb\\xffc\\rd"), d.finish()
    (['a'], ['b\\ufffdc'], ['d'])
    """

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._rest = ""  # text after the last terminator
        self._after_cr = False  # the last terminator was a "\r": a "\n" right after it is its end

    def feed(self, data: bytes) -> list[str]:
        """The lines completed by ``data``, without their terminators."""
        return self._split(self._decoder.decode(data))

    def finish(self) -> list[str]:
        """At the end of the stream: the last line, if text follows the last terminator (an
        incomplete multi-byte character at the very end counts as one U+FFFD)."""
        lines = self._split(self._decoder.decode(b"", final=True))
        if self._rest:
            lines.append(self._rest)
        self.reset()
        return lines

    def reset(self) -> None:
        """Forget any partial line and decoder state (a new connection starts afresh)."""
        self._decoder.reset()
        self._rest = ""
        self._after_cr = False

    def _split(self, text: str) -> list[str]:
        if not text:
            return []
        if self._after_cr and text[0] == "\n":
            text = text[1:]
        self._after_cr = text.endswith("\r")
        parts = _TERMINATOR.split(self._rest + text)
        self._rest = parts.pop()
        return parts
