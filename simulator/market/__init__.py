"""One market step (MarketEngine), shared by the live market and every offline run (SPEC 2)."""
