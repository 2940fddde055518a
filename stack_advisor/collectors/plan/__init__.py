"""Collection plans: YAML in, a matrix of cells out, rendered as Kubernetes Jobs and CronJobs."""

from stack_advisor.collectors.plan.model import Cell, Plan, expand_plan, load_plan, parse_plan

__all__ = ["Cell", "Plan", "expand_plan", "load_plan", "parse_plan"]
