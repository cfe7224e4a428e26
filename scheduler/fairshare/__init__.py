"""Long-term resource fairness: LTRF and H-LTRF (paper 002)."""
