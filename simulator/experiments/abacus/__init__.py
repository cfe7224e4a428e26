"""Abacus' experiments (paper 000, Sec. 7): Table 1's set-up, Figs. 9-11."""
