"""Advice for a real cluster: node pools from node labels, pool-by-pool ranking, the Pods that
target a pool, its results."""
