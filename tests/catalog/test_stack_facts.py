"""The catalogue's stack facts hold together: toolkit drivers rise with the toolkit, MIG profiles
belong to known boards and fit them, architectures are catalogue generations, NGC releases name
released toolkits."""

from __future__ import annotations

from packaging.version import Version

from stack_advisor.catalog import load_catalog
from stack_advisor.catalog import stack_facts as facts


def test_toolkit_drivers_rise_with_the_toolkit() -> None:
    toolkits = sorted(facts.cuda_toolkits(), key=lambda t: Version(t.id))
    drivers = [Version(t.driver) for t in toolkits]
    assert drivers == sorted(drivers)
    assert "12.7" not in {t.id for t in toolkits}


def test_mig_profiles_belong_to_known_boards_and_fit_them() -> None:
    catalog = load_catalog()
    for board in facts.mig_boards().values():
        entry = catalog.accelerators[board.id]
        assert entry.mig_slices, board.id
        for profile in board.profiles:
            found = facts.mig_profile_memory(board.id, profile)
            assert found is not None and found[0] <= (entry.memory_gb or 0), (board.id, profile)
        assert any(p.startswith(f"{entry.mig_slices}g.") for p in board.profiles), board.id


def test_architectures_are_catalogue_generations_and_releases_name_released_toolkits() -> None:
    generations = set(load_catalog().generations)
    for gen in ("volta", "hopper", "blackwell"):
        arch = facts.first_cuda(gen)
        assert arch is not None and arch.id in generations
    for release in facts.ngc_releases().values():
        assert (
            not isinstance(facts.cuda_toolkit(release.cuda), str)
            and facts.cuda_toolkit(release.cuda) is not None
        )
