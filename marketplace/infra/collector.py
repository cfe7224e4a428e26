"""Python's cyclic garbage collector kept out of the clock's tick, and off the objects a process loads at start-up.

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

:func:`settle` is for a process that has loaded the app and is about to serve (a web worker, in
``marketplace.wsgi``): what it loaded (modules, classes, the URLconf: about 165,000 objects) lives as
long as the process, yet every full pass walked it again -- 100-150 ms a pass here, in the middle of
whatever request started it. After one collection they are moved out of the collector's reach
(``gc.freeze``); a full pass then walks only what came after (7-10 ms in ``bench/bench_history.py``).
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


def settle() -> None:
    """Collect once, then freeze every object the process holds (``gc.freeze``): call it when start-up
    is done and before serving (module docstring). Frozen objects are never collected; the collection
    first frees what start-up left in cycles."""
    gc.collect()
    gc.freeze()
