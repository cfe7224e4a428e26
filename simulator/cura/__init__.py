"""Cura (paper 004) in the simulator: workload, baselines, live driver, pools."""
