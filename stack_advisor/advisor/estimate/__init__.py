"""Figures from evidence: the evidence index (observed, interpolated, transferred, refused), the
transfer model, the calibration and its file, placement overheads."""
