"""Django's PostgreSQL backend, whose health check at a request's start needs no statement while the
connection is idle and the server has sent nothing.

With ``CONN_HEALTH_CHECKS`` Django checks a persistent connection before a request's first query by
running ``SELECT 1`` (``is_usable``): a round trip, and a statement for the server to parse, plan and
run, on every request. A server that ends a connection (a restart, ``pg_terminate_backend``, an idle
timeout) sends its error and closes the socket, which then reads as ready; an idle connection on
which nothing arrived has nothing to say. So while libpq reports the connection OK and idle in no
transaction and a zero-timeout poll of its socket finds nothing to read, the connection is taken as
usable; anything else (something to read, a transaction left open, a bad status) gets Django's own
``SELECT 1``. After a query error (``errors_occurred``) Django's check runs as before. A connection
lost without a word (a cable pulled) is found by its first query either way.
"""

from __future__ import annotations

import select

from django.db.backends.postgresql import base
from psycopg import pq


class DatabaseWrapper(base.DatabaseWrapper):
    def close_if_health_check_failed(self) -> None:
        if self.connection is not None and self.health_check_enabled and not self.health_check_done and not self.pool \
                and self._quiet():
            self.health_check_done = True
            return
        super().close_if_health_check_failed()

    def _quiet(self) -> bool:
        """The connection is OK, idle outside a transaction, and its socket has nothing to read."""
        conn = self.connection
        try:
            if conn.closed or conn.pgconn.status != pq.ConnStatus.OK or conn.info.transaction_status != pq.TransactionStatus.IDLE:
                return False
            fd = conn.fileno()
        except Exception:  # a connection in a state this cannot read: Django's own check decides
            return False
        poller = select.poll()
        poller.register(fd, select.POLLIN | select.POLLPRI)
        return not poller.poll(0)
