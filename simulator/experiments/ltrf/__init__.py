"""LTRF / H-LTRF experiments (paper 002, Sec. 6) on real traces."""
