"""Cells that a spreadsheet will not run: CSV exports (the web's and the CLI's) pass every text
cell through ``spreadsheet_safe``."""

from __future__ import annotations

# A cell that begins with one of these is a formula to Excel, LibreOffice and Google Sheets
# (tab and CR as well: some strip them and read what follows).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _is_number(text: str) -> bool:
    try:
        float(text.replace(",", ""))
    except ValueError:
        return False
    return True


def spreadsheet_safe(text: str) -> str:
    """``text`` with a leading ``'`` when a spreadsheet would read it as a formula (OWASP's
    advice); plain numbers such as ``-1.5`` stay as they are."""
    if text.startswith(FORMULA_STARTS) and not _is_number(text):
        return "'" + text
    return text
