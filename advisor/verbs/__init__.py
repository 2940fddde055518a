"""What the advisor answers, each a function of a ``advisor.snapshot.Knowledge`` and a typed
request: recommend, predict, evaluate, compare, sweep comparisons, serving limits."""
