"""Cura's VM-aware scheduler and reconfiguration-based pool manager (paper 004)."""
