"""The cluster model shared by the live market and offline runs."""
