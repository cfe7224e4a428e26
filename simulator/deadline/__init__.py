"""Paper 003 in the simulator: deadline extension ratios under competition."""
