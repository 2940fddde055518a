"""Whether this is a CI run: there the Neo4j, Kubernetes and browser tiers must run, not skip."""

from __future__ import annotations

import os

IN_CI = os.environ.get("CI", "").lower() == "true"
