"""Advice for a real cluster: node pools from node labels, pool-by-pool ranking, its results."""
