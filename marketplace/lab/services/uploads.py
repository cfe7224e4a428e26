"""Uploaded traces: stored by the request, checked by a worker, deleted when refused or orphaned.

The request that uploads a trace only writes it to ``SIMULATION_UPLOAD_DIR`` (:func:`upload_store`):
at most ``SIMULATION_UPLOAD_MAX_BYTES`` as sent (the web middleware refuses a larger body before
it is read, with the form's page) and, for a gzip file, at most
``SIMULATION_UPLOAD_MAX_DECOMPRESSED_BYTES`` once decompressed (counted while streaming, so a
gzip bomb costs the request at most that much inflating). Parsing it, which took a web worker
7 s and 675 MB for a 64 kB ``.tsv.gz`` of 10^6 lines, is the worker's job
(``services.simulations.simulation_check``), within ``SIMULATION_UPLOAD_MAX_LINES`` lines and
``SIMULATION_UPLOAD_CHECK_S`` seconds.

A refused file is deleted at once (:func:`upload_discard`); :func:`upload_sweep` deletes files
that no study names (a request that died between storing and committing), once they are older
than an hour.
"""

from __future__ import annotations

import logging
import time
import uuid
import zlib
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError

from simulator.workloads.traces import TraceLimits

log = logging.getLogger(__name__)

GZIP_MAGIC = b"\x1f\x8b"
CHUNK = 256 * 1024
ORPHAN_AGE_S = 3600.0
SWEEP_EVERY_S = 600.0
_last_sweep = [float("-inf")]  # no sweep yet (not 0: the monotonic clock counts from boot)


def upload_dir() -> Path:
    return Path(settings.SIMULATION_UPLOAD_DIR)


def upload_limits() -> TraceLimits:
    """The lines, decompressed bytes, line length and seconds a worker may spend reading an uploaded trace."""
    return TraceLimits(max_lines=int(settings.SIMULATION_UPLOAD_MAX_LINES), max_seconds=float(settings.SIMULATION_UPLOAD_CHECK_S),
                       max_bytes=int(settings.SIMULATION_UPLOAD_MAX_DECOMPRESSED_BYTES))


def limit_text() -> str:
    """The upload limits in one sentence, as the form states them."""
    sent, unpacked = settings.SIMULATION_UPLOAD_MAX_BYTES / 2**20, settings.SIMULATION_UPLOAD_MAX_DECOMPRESSED_BYTES / 2**20
    return (f"at most {sent:g} MB as sent ({unpacked:g} MB once decompressed) and "
            f"{settings.SIMULATION_UPLOAD_MAX_LINES:,} lines")


def _suffix(name: str) -> str:
    name = name.lower()
    return ".swf.gz" if name.endswith(".swf.gz") else ".tsv.gz" if name.endswith(".gz") else Path(name).suffix[:8] or ".tsv"


def upload_store(*, upload: Any) -> Path:
    """Write an uploaded file (Django ``UploadedFile``) under the upload folder; its path.

    Raises:
        ValidationError: {"upload": ...} over the size limit as sent, over the decompressed
            limit, or a corrupt gzip stream; nothing is left on disk then.
    """
    folder = upload_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{uuid.uuid4().hex}{_suffix(str(upload.name))}"
    try:
        _write(upload, path)
    except BaseException:
        upload_discard(path)
        raise
    return path


def _write(upload: Any, path: Path) -> None:
    most, unpacked_most = int(settings.SIMULATION_UPLOAD_MAX_BYTES), int(settings.SIMULATION_UPLOAD_MAX_DECOMPRESSED_BYTES)
    sent = unpacked = 0
    inflate: _Members | None = None
    gz: bool | None = None
    with open(path, "wb") as out:
        for chunk in upload.chunks(CHUNK):
            if gz is None:
                gz = chunk[:2] == GZIP_MAGIC
                inflate = _Members() if gz else None
            sent += len(chunk)
            if sent > most:
                raise ValidationError({"upload": f"The file is larger than {limit_text()}."})
            out.write(chunk)
            if inflate is not None:
                unpacked += inflate.feed(chunk, unpacked_most - unpacked)
                if unpacked > unpacked_most:
                    raise ValidationError({"upload": f"The file decompresses to more than {unpacked_most / 2**20:g} MB "
                                                     f"(the limit is {limit_text()})."})


class _Members:
    """A gzip stream's decompressed size, member after member: ``gzip.open`` (the worker) reads every
    member, so each one counts (a valid first member followed by a gigabyte of "a" in a second
    member passed when only the first was counted)."""

    def __init__(self) -> None:
        self._inflate = zlib.decompressobj(wbits=31)

    def feed(self, chunk: bytes, room: int) -> int:
        """Bytes ``chunk`` inflates to, stopping just past ``room`` (never more in memory than a chunk's worth).

        Raises:
            ValidationError: {"upload": ...} for a corrupt stream.
        """
        total, data = 0, chunk
        try:
            while data or self._inflate.unconsumed_tail:
                piece = self._inflate.decompress(data or self._inflate.unconsumed_tail, CHUNK)
                data = b""
                total += len(piece)
                if total > room:
                    break
                if self._inflate.eof:  # a member ended: what follows is the next member (or padding)
                    data = self._inflate.unused_data.lstrip(b"\x00")
                    self._inflate = zlib.decompressobj(wbits=31)
                    if not data:
                        break
                elif not piece:
                    break
        except zlib.error:
            raise ValidationError({"upload": "The file starts like gzip but is not a valid gzip stream."}) from None
        return total


def upload_discard(path: str | Path) -> None:
    """Delete an uploaded file (only inside the upload folder: a repository trace is never touched)."""
    path = Path(path)
    if path.parent.resolve() == upload_dir().resolve():
        path.unlink(missing_ok=True)


def upload_sweep(*, older_than_s: float = ORPHAN_AGE_S) -> int:
    """Delete uploaded files that no study names and that are older than ``older_than_s``; how many."""
    from marketplace.lab.models import SimulationStudy

    folder = upload_dir()
    if not folder.is_dir():
        return 0
    named = {Path(str(w.get("trace", ""))).name for w in SimulationStudy.objects.values_list("workload", flat=True) if isinstance(w, dict)}
    cutoff, removed = time.time() - older_than_s, 0
    for path in folder.iterdir():
        if path.is_file() and path.name not in named and path.stat().st_mtime < cutoff:
            path.unlink(missing_ok=True)
            removed += 1
    if removed:
        log.info("deleted %s orphaned upload(s) from %s", removed, folder)
    return removed


def upkeep_due() -> bool:
    """True at most once per ``SWEEP_EVERY_S`` in this process (the sweeper runs every second or so)."""
    now = time.monotonic()
    if now - _last_sweep[0] < SWEEP_EVERY_S:
        return False
    _last_sweep[0] = now
    return True
