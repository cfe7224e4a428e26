"""The market's Plan decides, Slurm executes: launches become Slurm array jobs, Slurm's job states
become departures, its nodes become capacity, promises become advance reservations.

The loop, per market (``hooks.SlurmPart`` calls these from the clock):

1. :func:`slurm_poll` -- before a tick, outside any transaction: ``squeue --json`` and
   ``sinfo --json``; each task row takes the state Slurm reports (running, completed, failed; a
   submitted task Slurm no longer knows is lost); a partition whose nodes are drained or down is
   a capacity change (audited, so quotes see it); jobs that did not come from the market hold
   cores, which the engine sees as taken. An unreachable controller is recorded (since when) and
   nothing else changes: bids are still accepted, dispatch pauses.
2. :func:`engine_feed` -- inside the tick, under the market row lock: the ends the poll saw are
   told to the engine once (``applied``), completions as departures at the simulated time Slurm's
   end maps to, failures and losses as tasks to run again (up to ``max_retries`` retries each;
   the tenant pays for no failed work).
3. :func:`launches_record` -- inside the same tick, after its steps: each batch the engine started
   becomes rows (one per task), each kill marks the batch's rows for ``scancel``.
4. :func:`slurm_dispatch` -- after the tick commits, outside the lock: rows not yet submitted go
   to Slurm as one array per batch, carrying the batch's key in ``--comment``; a key Slurm already
   holds (a dispatcher killed after ``sbatch``) is adopted, never submitted twice.

Times: the market clock follows the wall clock times ``clock_speed`` (1 in production), so a
simulated time maps to a wall time through the last tick (``Market.clock_wall_at``,
``Market.sim_time``). A task runs its command for ``duration / clock_speed`` wall seconds.
"""
