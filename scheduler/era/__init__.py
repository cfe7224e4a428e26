"""ERA reservations with dynamic prices (paper 001)."""
