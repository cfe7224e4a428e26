"""Deadline quotes at minimum payment (paper 003)."""
