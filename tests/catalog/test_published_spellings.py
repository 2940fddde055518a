"""Names as vendors and submitters publish them (issue 41 item 4, issue 43's name items):
trademark marks, digit/letter confusions, words in another order, a family named with its bus
and memory, an edition told by the system's other fields; today's parts carry published
figures with their sources."""

from __future__ import annotations

import pytest

from stack_advisor.catalog import browse, load_catalog, resolve_accelerator
from stack_advisor.catalog.editions import resolve_in_context
from stack_advisor.catalog.spelling import closeness, fold, strip_marks


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("Intel(R) Arc(TM) Pro B70", "Arc-Pro-B70"),
        ("Intel® Arc™ Pro B70", "Arc-Pro-B70"),
        ("AMD Instinct™ MI355X", "MI355X"),
        ("AMD Instinct MI350P", "MI350P"),
        ("NVIDIA RTX Pro 6000 SE PCIe 96GB", "RTX-PRO-6000-Blackwell-Server"),
        ("Intel(R) Arc(TM) 140T GPU", "Arc-140T"),
        ("Intel® Arc™ Pro B70 Graphics", "Arc-Pro-B70"),
        ("AMD Instinct(TM) MI355X", "MI355X"),
        ("AMD Instinct™ MI350X", "MI350X"),
        ("AMD Instinct™ MI350P", "MI350P"),
        ("NVIDIA® H200 NVL", "H200-NVL-141GB"),
        ("NVIDIA(R) H20", "H20"),
        ("NVIDIA® B300", "B300-SXM-288GB"),
        ("NVIDIA® GB300", "GB300"),
        ("NVIDIA(R) B200", "B200-SXM-180GB"),
        ("NVIDIA® GB200", "GB200"),
        ("NVIDIA® RTX PRO™ 6000 Blackwell Server Edition", "RTX-PRO-6000-Blackwell-Server"),
        ("NVIDIA® RTX PRO™ 6000 Blackwell Workstation Edition", "RTX-PRO-6000-Blackwell-WS"),
        ("NVIDIA RTX PRO(TM) 6000 Blackwell Max-Q Workstation", "RTX-PRO-6000-Blackwell-MaxQ"),
        ("NVIDIA RTX PRO(TM) 4500 Blackwell Server Edition", "RTX-PRO-4500-Blackwell-Server"),
        ("NVIDIA RTX PRO 4500 Blackwell Workstation Edition", "RTX-PRO-4500-Blackwell-WS"),
        # parts the next rounds publish on (issue 41 item 4, today's parts)
        ("NVIDIA GeForce RTX 5090", "RTX-5090"),
        ("NVIDIA® GeForce RTX™ 5090", "RTX-5090"),
        ("RTX5090", "RTX-5090"),
        ("NVIDIA-GeForce-RTX-5090", "RTX-5090"),  # GFD
        ("NVIDIA GeForce RTX 5090 32GB", "RTX-5090"),
        ("NVIDIA(R) GeForce RTX(TM) 5080", "RTX-5080"),
        ("NVIDIA RTX PRO 5000 Blackwell", "RTX-PRO-5000-Blackwell"),
        ("NVIDIA RTX PRO™ 5000 Blackwell", "RTX-PRO-5000-Blackwell"),
        ("NVIDIA RTX PRO 5000 Blackwell-PCIe-48GB", "RTX-PRO-5000-Blackwell"),
        ("NVIDIA RTX PRO 5000 Blackwell 72GB", "RTX-PRO-5000-Blackwell-72GB"),
        ("NVIDIA RTX PRO 5000 72GB Blackwell", "RTX-PRO-5000-Blackwell-72GB"),
        ("NVIDIA RTX PRO 4000 Blackwell", "RTX-PRO-4000-Blackwell"),
        ("NVIDIA RTX PRO(TM) 4000 Blackwell", "RTX-PRO-4000-Blackwell"),
        ("NVIDIA RTX PRO 2000 Blackwell", "RTX-PRO-2000-Blackwell"),
        ("AMD Radeon AI PRO R9700", "Radeon-AI-PRO-R9700"),
        ("AMD Radeon AI PRO R9700 32GB", "Radeon-AI-PRO-R9700"),
        ("AMD Radeon™ AI PRO R9700", "Radeon-AI-PRO-R9700"),
        ("AMD Radeon(TM) AI PRO R9700 32GB", "Radeon-AI-PRO-R9700"),
        ("Intel Arc Pro B50", "Arc-Pro-B50"),
        ("Intel(R) Arc(TM) Pro B50 Graphics", "Arc-Pro-B50"),
        ("NVIDIA Jetson Orin Nano", "Jetson-Orin-Nano"),
        ("NVIDIA Jetson Orin Nano 8GB", "Jetson-Orin-Nano"),
        ("NVIDIA Jetson Orin Nano Super", "Jetson-Orin-Nano-Super"),
        ("NVIDIA® Jetson Orin™ Nano Super Developer Kit", "Jetson-Orin-Nano-Super"),
        ("FuriosaAI RNGD", "FuriosaAI-RNGD"),
        ("Tenstorrent Blackhole p150a", "Tenstorrent-Blackhole-p150"),
        ("Tenstorrent Blackhole™ p150b", "Tenstorrent-Blackhole-p150"),
        ("Tenstorrent Wormhole n300s", "Tenstorrent-Wormhole-n300"),
        ("Tenstorrent Wormhole™ n300", "Tenstorrent-Wormhole-n300"),
    ],
)
def test_published_spellings_resolve(text: str, key: str) -> None:
    match = resolve_accelerator(text)
    assert match.resolved and match.key == key


def test_marks_and_confusions_are_read_as_written() -> None:
    assert strip_marks("Intel(R) Xeon(R) Platinum") == "Intel Xeon Platinum"
    assert fold("H1OO") == fold("H100") == "h100"
    assert fold("H10O") == "h100"
    # every written word held, in any order, ranks above a closer-looking name missing one
    assert closeness("RTX 6000 PRO", "RTX PRO 6000 Blackwell")[0] == 1.0
    assert closeness("RTX 6000 PRO", "RTX 6000 Ada")[0] < 1.0


@pytest.mark.parametrize("typed", ["H1OO", "H10O", "h1oo"])
def test_letters_for_digits_suggest_the_part(typed: str) -> None:
    match = resolve_accelerator(typed)
    assert not match.resolved
    assert match.suggestions and all("H100" in s for s in match.suggestions)
    assert "H100" in match.message()


def test_words_in_another_order_name_the_family_not_a_neighbour() -> None:
    for typed in ("RTX 6000 PRO", "NVIDIA RTX 6000 PRO"):
        match = resolve_accelerator(typed)
        assert match.refusal == "family"
        assert all(s.startswith("RTX-PRO-6000-Blackwell") for s in match.suggestions)
        assert "RTX-6000-Ada" not in match.suggestions


def test_a_family_with_its_bus_and_memory_is_answered_with_both_editions() -> None:
    match = resolve_accelerator("NVIDIA RTX PRO 4500 Blackwell-PCIe-32GB")
    assert not match.resolved and match.refusal == "family"
    assert set(match.suggestions) == {"RTX-PRO-4500-Blackwell-WS", "RTX-PRO-4500-Blackwell-Server"}
    # a memory size no member has is not the family ("H100 SXM5 94GB" stays refused)
    assert resolve_accelerator("H100 SXM5 94GB").refusal == "unknown"


def test_the_systems_own_words_tell_the_edition() -> None:
    name = "NVIDIA RTX PRO 4500 Blackwell-PCIe-32GB"
    server = resolve_in_context(name, "ACME R760 (4x RTX PRO 4500 Blackwell Server Edition)")
    assert server.resolved and server.key == "RTX-PRO-4500-Blackwell-Server"
    assert server.matched_by == "context"
    ws = resolve_in_context("RTX PRO 6000 Blackwell", "Precision 7960 Workstation, Max-Q")
    assert ws.resolved and ws.key == "RTX-PRO-6000-Blackwell-MaxQ"
    unsaid = resolve_in_context(name, "ACME R760", None)
    assert not unsaid.resolved and len(unsaid.suggestions) == 2
    both = resolve_in_context(name, "server or workstation")
    assert not both.resolved


@pytest.mark.parametrize(
    ("name", "system", "key"),
    [
        (
            "NVIDIA RTX PRO 4500 Blackwell-PCIe-32GB",
            "Dell PowerEdge R770 (4x RTX PRO 4500 Blackwell)",
            "RTX-PRO-4500-Blackwell-Server",
        ),
        (
            "NVIDIA RTX PRO 6000 Blackwell",
            "HPE ProLiant Compute DL380a Gen12 (8x RTX Pro 6000 Blackwell)",
            "RTX-PRO-6000-Blackwell-Server",
        ),
        ("NVIDIA RTX PRO 6000 Blackwell", "Cisco UCS C845A M8", "RTX-PRO-6000-Blackwell-Server"),
        (
            "NVIDIA RTX PRO 4500 Blackwell-PCIe-32GB",
            "Lenovo ThinkStation P8",
            "RTX-PRO-4500-Blackwell-WS",
        ),
    ],
)
def test_a_server_or_workstation_line_tells_the_edition(name: str, system: str, key: str) -> None:
    """No edition written, but the system is a vendor's rack-server (or workstation) line: the
    one edition sold for that class of machine."""
    match = resolve_in_context(name, system)
    assert match.resolved and match.key == key and match.matched_by == "context"


@pytest.mark.parametrize(
    ("name", "system", "candidates"),
    [
        # a workstation line takes either 6000 workstation edition (600 W or Max-Q): neither
        ("NVIDIA RTX PRO 6000 Blackwell", "Dell Precision 7960 Tower", 3),
        # "precision" as a word is not the Dell line
        ("NVIDIA RTX PRO 4500 Blackwell-PCIe-32GB", "ACME box, FP8 precision", 2),
        # a server and a workstation line both named: neither class
        ("NVIDIA RTX PRO 4500 Blackwell-PCIe-32GB", "Dell PowerEdge or Precision 7960", 2),
    ],
)
def test_a_class_that_names_no_one_edition_answers_with_every_candidate(
    name: str, system: str, candidates: int
) -> None:
    match = resolve_in_context(name, system)
    assert not match.resolved and match.refusal == "family"
    assert len(match.suggestions) == candidates
    assert all(repr(s) in match.message() for s in match.suggestions)  # did you mean each one


def test_todays_parts_have_the_figures_their_benchmarks_run_at() -> None:
    """Memory, bandwidth and the precision each part's MLPerf results run at, with a source;
    a figure no published source gives stays empty (and the note says so)."""
    cat = load_catalog().accelerators
    for part, precision in [
        ("B300-SXM-288GB", "fp4"),
        ("GB300", "fp4"),
        ("B200-SXM-180GB", "fp4"),
        ("GB200", "fp4"),
        ("MI355X", "fp4"),
        ("MI350X", "fp4"),
        ("MI350P", "fp8"),
        ("H200-NVL-141GB", "fp8"),
        ("Arc-Pro-B70", "int8"),
    ]:
        entry = cat[part]
        assert entry.memory_gb and entry.memory_bw_gbs, part
        assert getattr(entry.peak_tflops, precision), (part, precision)
        assert entry.source.startswith("https://"), part
    # B300 runs below GB300 at fp4 (HGX 105 PF dense / 8 against NVL72 1.1 EF / 72)
    assert cat["B300-SXM-288GB"].peak_tflops.fp4 < cat["GB300"].peak_tflops.fp4
    # H20: fp8 296 dense (as int8, twice the dense fp16), a press source named in the note
    h20 = cat["H20"]
    assert (h20.peak_tflops.fp8, h20.peak_tflops.int8, h20.peak_tflops.fp16) == (296, 296, 148)
    assert "1cnz.cn" in (h20.note or "")
    for part in ("RTX-PRO-6000-Blackwell-Server", "RTX-PRO-4500-Blackwell-Server"):
        assert cat[part].memory_bw_gbs and not cat[part].peak_tflops.as_dict()
        assert "left empty" in (cat[part].note or "")


def test_todays_parts_have_their_scale_up_link() -> None:
    """Scale-up bandwidth per accelerator, both directions (NVIDIA's convention; AMD's MI300X and
    MI325X counted as links x per-link rate): MI350-series OAM 7 x 153.6 GB/s; NVLink 5 1.8 TB/s;
    the PCIe-only MI350P and RTX PRO boards have none."""
    cat = load_catalog().accelerators
    for part in ("MI355X", "MI350X"):
        assert cat[part].interconnect_gbs == pytest.approx(7 * 153.6), part
        assert "servethehome" in (cat[part].note or ""), part
    for part in ("B300-SXM-288GB", "GB300", "B200-SXM-180GB", "GB200"):
        assert cat[part].interconnect_gbs == 1800, part
    assert (cat["H20"].interconnect_gbs, cat["H200-NVL-141GB"].interconnect_gbs) == (900, 900)
    for part in ("MI350P", "RTX-PRO-6000-Blackwell-Server", "RTX-PRO-4500-Blackwell-Server"):
        assert cat[part].interconnect_gbs is None, part


def test_siblings_are_known_parts_of_the_same_vendor() -> None:
    cat = load_catalog().accelerators
    assert cat["B300-SXM-288GB"].siblings[:2] == ["B200-SXM-180GB", "GB300"]
    assert "MI325X" in cat["MI355X"].siblings
    for entry in cat.values():
        for sibling in entry.siblings:
            assert cat[sibling].vendor == entry.vendor, (entry.id, sibling)
    # a search reads an entry's own texts, not the parts it names as siblings
    found = [h["id"] for h in browse.search("H200 NVL") if h["kind"] == "accelerator"]
    assert found == ["H200-NVL-141GB"] and "H200-NVL-141GB" in cat["H100-NVL-94GB"].siblings


@pytest.mark.parametrize(
    ("part", "memory_gb", "memory_bw_gbs", "precision", "dense"),
    [
        # NVIDIA's "AI TOPS" are FP4 with sparsity: the dense figure is half
        ("RTX-5090", 32, 1792, "fp4", 1676),
        ("RTX-5080", 16, 960, "fp4", 900.5),
        ("RTX-PRO-5000-Blackwell", 48, 1344, "fp4", 1032),
        ("RTX-PRO-5000-Blackwell-72GB", 72, 1344, "fp4", 1032),
        # Jetson TOPS are INT8 with sparsity (GPU only on Orin Nano): half
        ("Jetson-Orin-Nano", 8, 68, "int8", 20),
        ("Jetson-Orin-Nano-Super", 8, 102, "int8", 33.5),
        ("FuriosaAI-RNGD", 48, 1500, "fp8", 512),
        ("Tenstorrent-Wormhole-n300", 24, 576, "fp8", 466),
    ],
)
def test_new_parts_carry_their_published_figures(
    part: str, memory_gb: float, memory_bw_gbs: float, precision: str, dense: float
) -> None:
    entry = load_catalog().accelerators[part]
    assert (entry.memory_gb, entry.memory_bw_gbs) == (memory_gb, memory_bw_gbs)
    assert getattr(entry.peak_tflops, precision) == dense
    assert entry.source.startswith("https://") and entry.note


def test_new_parts_without_a_published_compute_figure_leave_it_empty() -> None:
    """Memory (and bandwidth where a source gives it) with its source; compute that only a
    spec database derives from clocks, or that sources disagree on, stays empty and the note
    says so."""
    cat = load_catalog().accelerators
    for part, memory_gb in [
        ("RTX-PRO-4000-Blackwell", 24),
        ("RTX-PRO-2000-Blackwell", 16),
        ("Radeon-AI-PRO-R9700", 32),
        ("Arc-Pro-B50", 16),
        ("Tenstorrent-Blackhole-p150", 32),
    ]:
        entry = cat[part]
        assert entry.memory_gb == memory_gb, part
        assert not entry.peak_tflops.as_dict(), part
        assert "left empty" in (entry.note or ""), part
    assert cat["Radeon-AI-PRO-R9700"].generation == "rdna4"
    assert cat["Tenstorrent-Wormhole-n300"].counted_as  # one card of two ASICs


def test_a_huge_name_is_refused_at_once_and_quoted_cut() -> None:
    """A probe's 100,000-character ``catalogue show`` ran past a minute (a pattern that backtracks
    over the whole text, once per catalogue name) and echoed the text whole."""
    import time

    from stack_advisor.catalog import resolve_accelerator
    from stack_advisor.catalog.browse import show_entry
    from stack_advisor.schema.errors import NotFound

    huge = "x" * 100_000
    started = time.perf_counter()
    match = resolve_accelerator(huge)
    with pytest.raises(NotFound) as refused:
        show_entry(huge)
    assert time.perf_counter() - started < 5  # bounded work, not a timing claim: seconds apart
    assert not match.resolved and match.suggestions == ()
    assert "(100000 characters)" in str(refused.value) and len(str(refused.value)) < 400
    # a heterogeneous system's name still reads as its parts
    mixed = resolve_accelerator("NVIDIA H100-SXM-80GB (x32), NVIDIA H200-SXM-141GB (x16)")
    assert mixed.kind == "mixed"
