"""Published schedulers the lab compares the market with, re-implemented from their papers.

Each is a fair-share-stage policy (``scheduler.registry.FAIRSHARE``): it decides
which queued work gets a free unit of one resource type, through the same
allocator interface as :class:`~scheduler.fairshare.allocator.FairShareAllocator`
(``pick_leaf``, ``record_start`` / ``record_more`` / ``record_finish``,
``to_state`` / ``from_state``), so the cluster's dispatch stages run them
unchanged:

* :mod:`~scheduler.published.drf` -- Dominant Resource Fairness (Ghodsi et al.,
  NSDI'11), instantaneous and hierarchical as YARN's Fair Scheduler applies it;
* :mod:`~scheduler.published.slurm` -- Slurm's classic fair share: usage decayed
  by ``PriorityDecayHalfLife``, factor ``2^(-U/S)``;
* :mod:`~scheduler.published.karma` -- Karma (Vuppalapati et al., OSDI'23):
  credits over quanta, a guaranteed share, borrowing and donating;
* :mod:`~scheduler.published.tiresias` -- Tiresias (Gu et al., NSDI'19):
  discretised two-dimensional least attained service with starvation promotion;
* :mod:`~scheduler.published.themis` -- Themis (Mahajan et al., NSDI'20):
  finish-time fairness ``rho = T_shared / T_ideal`` and the partial-allocation
  auction among the jobs with the worst ``rho``;
* :mod:`~scheduler.published.srpt` -- shortest remaining work first, the
  control that reads the same exact job sizes as Themis' oracle variant.

DRF, Slurm and Karma rank leaf queues (users); Tiresias, Themis and SRPT rank jobs
across all queues (``job_level``: the cluster hands them every active job,
:class:`~scheduler.published.jobs.JobView`, as FIFO across queues already ranks
jobs by arrival). Pure numpy; no Django.
"""
