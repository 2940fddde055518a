"""Kubernetes manifests for a recommendation: a Pod that selects its nodes by GPU feature discovery
labels, and a multi-node training job placed as a gang."""
