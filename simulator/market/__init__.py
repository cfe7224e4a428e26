"""One market step (MarketEngine), shared by the live market and every offline run (README, "How the market runs")."""
