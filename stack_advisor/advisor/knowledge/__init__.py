"""What the advisor reads: the observation table and its file, accelerator specs and prices, the
compatibility rules."""
