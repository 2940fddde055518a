"""Stack sweeps: one node measured across many framework / CUDA / cuDNN builds, each in its own
environment created with uv (``env``), described by a matrix (``matrix``), run by ``run``; the
collector inside a cell is ``cell``."""
