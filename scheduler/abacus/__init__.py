"""Abacus budget auction (paper 000, Ding, Zhang, Ma, Yang 2015)."""
