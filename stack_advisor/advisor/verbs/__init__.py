"""What the advisor answers, each a function of a ``stack_advisor.advisor.snapshot.Knowledge`` and a
typed request: recommend, predict, evaluate, compare, sweep comparisons, serving limits."""
