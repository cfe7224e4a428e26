"""The simulation lab: one workload under several market configurations, and their comparison."""
