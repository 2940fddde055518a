"""The web explorer's pages. Each page answers through the services the ``/v1`` routes call
(``stack_advisor.advisor.service``: recommend, predict, compare, placement overheads, sweeps, the
leaderboard and known-bad rows) and the same rows ``advisor plot`` draws
(``stack_advisor.advisor.charts.data``), so a page and the API cannot disagree; a page only parses
its form and renders. Every form is a GET form: the URL holds every field (a permalink), and
``format=csv`` or ``format=json`` exports what is shown.
"""

from __future__ import annotations

from fastapi import APIRouter

from stack_advisor.web.pages import account, compare, evidence, leaderboard, recommend

router = APIRouter(include_in_schema=False)
for _pages in (evidence, leaderboard, recommend, compare, account):
    router.include_router(_pages.router)

__all__ = ["router"]
