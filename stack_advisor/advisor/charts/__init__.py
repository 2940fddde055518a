"""Chart data from the observation table, and the figures drawn from it."""
