"""Python's cyclic garbage collector kept out of the clock's tick.

CPython frees an object when its last reference goes (reference counting); the cyclic collector
exists only for objects that refer to each other in a cycle. It runs whenever allocations outnumber
deallocations by 700 (``gc.get_threshold``), and each pass walks every tracked object of the
generations it collects, alive or not. A tick of 5,000 active jobs allocates enough to start about
a hundred young passes, some older ones, and now and then a full pass over the whole process
(about 200,000 tracked objects: 100-200 ms) -- while it holds the market's row, which every bid waits
for. The tick itself makes no reference cycles (``tests/marketplace/market/test_tick_garbage.py``
checks that a tick leaves nothing for the collector), so those passes find nothing to free.

:func:`paused` turns the collector off for a block and back on when the last paused block of the
process ends; the allocations counted meanwhile start one pass at the next allocation after it,
outside the block. Objects without cycles are freed inside the block as always.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

_lock = threading.Lock()
_depth = 0
_was_enabled = False


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """No cyclic garbage collection while the block runs (nested and concurrent blocks: until the
    last ends); a collector that was off when the first block began stays off."""
    global _depth, _was_enabled
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _was_enabled:
                gc.enable()
