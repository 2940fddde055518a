"""Kubernetes manifests for a recommendation: a Pod, a pool-targeted Pod."""
