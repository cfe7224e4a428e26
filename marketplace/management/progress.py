"""Progress of long management commands (``replay_trace``) that never garbles a log.

On a terminal: a tqdm bar, and while it is shown this process's log records are written
above it (``tqdm.contrib.logging.logging_redirect_tqdm``), so a record never lands in the
middle of the bar. Elsewhere (a pipe, a file, CI): plain whole lines, at most one every
``every_s`` wall seconds, and never a carriage return, so the line-based request log of a
server writing to the same place stays one record per line.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from typing import Any, TextIO


def _is_tty(stream: Any) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


class Progress:
    """``update(done, **fields)`` as work proceeds, ``close()`` at the end (or use ``with``).

    Args:
        total: the number of items (bids) to reach.
        stream: where to write (a command's ``self.stdout._out`` or any text stream).
        tty: force the bar (True) or the plain lines (False); default: ``stream.isatty()``.
        every_s: wall seconds between two plain lines.
        clock: the wall clock (injected by tests).
    """

    def __init__(self, total: int, *, stream: TextIO, desc: str = "replay", tty: bool | None = None,
                 every_s: float = 10.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.total, self.stream, self.desc, self.every_s, self.clock = total, stream, desc, every_s, clock
        self.tty = _is_tty(stream) if tty is None else tty
        self._last: float | None = None
        self._fields: dict[str, Any] = {}
        self._done = 0
        self._bar: Any = None
        self._redirect: contextlib.ExitStack | None = None
        if self.tty:
            from tqdm import tqdm  # only a terminal needs it
            from tqdm.contrib.logging import logging_redirect_tqdm

            self._bar = tqdm(total=total, desc=desc, unit="bid", file=stream, dynamic_ncols=True, leave=True)
            self._redirect = contextlib.ExitStack()
            self._redirect.enter_context(logging_redirect_tqdm())

    def update(self, done: int, **fields: Any) -> None:
        self._done, self._fields = done, fields
        if self._bar is not None:
            self._bar.n = done
            self._bar.set_postfix_str(self._text(fields), refresh=False)
            self._bar.refresh()
            return
        now = self.clock()
        if self._last is None or now - self._last >= self.every_s:
            self._line()
            self._last = now

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            if self._redirect is not None:
                self._redirect.close()
        elif self._fields or self._done:
            self._line()  # the final state, always

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _line(self) -> None:
        self.stream.write(f"{self.desc}: {self._done}/{self.total} bids submitted, {self._text(self._fields)}\n")
        self.stream.flush()

    @staticmethod
    def _text(fields: dict[str, Any]) -> str:
        return " ".join(f"{k}={v}" for k, v in fields.items())


@contextlib.contextmanager
def progress(total: int, *, stream: TextIO, **kwargs: Any) -> Iterator[Progress]:
    p = Progress(total, stream=stream, **kwargs)
    try:
        yield p
    finally:
        p.close()
