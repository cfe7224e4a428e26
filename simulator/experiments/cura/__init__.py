"""Cura's experiments (paper 004, Sec. IV): Fig. 5 and Table 7."""
