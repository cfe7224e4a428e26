"""Workloads: real traces (SWIM, SWF) and the papers' synthetic set-ups."""
