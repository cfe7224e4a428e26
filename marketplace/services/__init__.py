"""All writes to the marketplace: one module per area (HackSoft services)."""
