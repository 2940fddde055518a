"""The test suite.

One BLAS/OpenMP thread per test process (``OMP_NUM_THREADS=1`` unless already set), set here
because this package is imported before tests/conftest.py and so before numpy (nothing pytest
loads ahead of it imports numpy): OpenBLAS starts one thread per core at import, and on the 2-core
test machines, shared by several pytest runs, its idle threads spin-wait between the small matrix
calls the tests make. Child processes (the CLI and server subprocesses) inherit it; the library's
own answers pin one thread anyway (threadpoolctl in stack_advisor.advisor.engine), so no answer
changes. Compare with the former default in turn: ``python bench/fast_tier.py`` against
``python bench/fast_tier.py --env OMP_NUM_THREADS=2``. On the shared machine under load (load
average ~4) the difference was within one run's spread (fast tier 6.32 vs 6.08 CPU-minutes;
tests/advisor 3.02 vs 3.22).
"""

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
