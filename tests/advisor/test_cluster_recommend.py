"""Recommend for a cluster over the real starter knowledge base: (pool, stack) pairs, the pool's
driver respected, bases, images, pool-targeting manifests, gangs, what-if, the API."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from stack_advisor.advisor.cluster.advice import ClusterAdvisor
from stack_advisor.advisor.cluster.pools import group_pools, nodes_from_json
from stack_advisor.advisor.cluster.results import PoolBasis
from stack_advisor.advisor.knowledge.rules import component_versions, stack_components
from stack_advisor.schema.errors import InvalidInput
from stack_advisor.schema.models import SoftwareStack
from tests.support.gfd_pools import POOL_NODES

WORKLOAD = {"benchmark": "resnet50", "scenario": "Offline"}
LLAMA_OFFLINE = {"benchmark": "llama2-70b-99", "scenario": "Offline"}
IMAGE = (
    "registry.example.org/team/resnet50-trt:1"  # the user's image (--image): MLPerf records none
)


@pytest.fixture(scope="module")
def pools():  # type: ignore[no-untyped-def]
    return group_pools(nodes_from_json(POOL_NODES))


@pytest.fixture(scope="module")
def answer(kb_advisor, pools):  # type: ignore[no-untyped-def]
    return ClusterAdvisor(kb_advisor).recommend(
        WORKLOAD, pools, source="test", top=100, image=IMAGE
    )


def _cuda_major(stack: dict[str, Any]) -> int | None:
    versions = component_versions(stack_components(SoftwareStack.model_validate(stack)))
    cuda = versions.get("cuda")
    return cuda.major if cuda else None


def test_every_usable_pool_gets_ranked_stacks(answer) -> None:  # type: ignore[no-untyped-def]
    by_pool: dict[str, list[Any]] = {}
    for r in answer.recommendations:
        by_pool.setdefault(r.pool, []).append(r)
    assert set(by_pool) == {p.name for p in answer.pools if p.usable}
    assert answer.excluded_pools == {
        "kubevirt": next(p.reason for p in answer.pools if p.name == "kubevirt")
    }
    assert [r.rank for r in answer.recommendations] == list(
        range(1, len(answer.recommendations) + 1)
    )
    scores = [r.score for r in answer.recommendations]
    assert scores == sorted(scores, reverse=True)
    # one row per stack as the pool runs it: stacks differing only by the driver their results
    # were recorded on are one (a probe read the same label twice in a pool)
    for pool, rows in by_pool.items():
        labels = [r.stack_label for r in rows]
        assert len(labels) == len(set(labels)), (pool, labels)
    for r in answer.recommendations:
        assert (r.image, r.image_source) == (IMAGE, "given (--image)")
        assert r.manifests[0]["spec"]["containers"][0]["image"] == IMAGE
        assert r.interval.low <= r.value <= r.interval.high
        assert r.metric == "samples_per_second" and r.value > 0
        assert (
            r.manifests[0]["spec"]["nodeSelector"]
            == next(p for p in answer.pools if p.name == r.pool).node_selector
        )
    # the T4 pool's device is in the knowledge base: its figures are observed or interpolated
    assert {r.basis for r in by_pool["t4-pool"]} <= {PoolBasis.OBSERVED, PoolBasis.INTERPOLATED}
    assert all(r.based_on["accelerator"].endswith("T4") for r in by_pool["t4-pool"])


def _valid_pod(manifest: dict[str, Any]) -> None:
    """Strict OpenAPI validation (the real apiserver's dry run is in tests/kube)."""
    import kubernetes_validate  # a dev dependency (pyproject.toml)

    kubernetes_validate.validate(manifest, "1.35.0", strict=True)


def test_manifests_are_valid_and_round_trip_through_yaml(answer) -> None:  # type: ignore[no-untyped-def]
    import yaml

    for r in answer.recommendations:
        assert list(yaml.safe_load_all(r.snippet_yaml)) == r.manifests
        (pod,) = r.manifests
        _valid_pod(pod)


def test_driver_470_pool_never_gets_a_cuda_12_stack(answer) -> None:  # type: ignore[no-untyped-def]
    t4 = [r for r in answer.recommendations if r.pool == "t4-pool"]
    assert t4 and all(r.driver == "470.82.01" for r in t4)
    assert all((_cuda_major(r.stack) or 0) < 12 for r in t4), [r.stack_label for r in t4]
    newer = [r for r in answer.recommendations if r.pool == "a100-bm"]
    assert newer and all(r.driver == "550.54.15" for r in newer)


def test_no_image_no_manifests(kb_advisor, pools) -> None:  # type: ignore[no-untyped-def]
    result = ClusterAdvisor(kb_advisor).recommend(WORKLOAD, pools, source="test", top=3)
    for r in result.recommendations:
        assert r.image is None and r.manifests == [] and r.snippet_yaml == ""
        assert any("pass --image" in w for w in r.warnings)
    with pytest.raises(InvalidInput, match="not a container image reference"):
        ClusterAdvisor(kb_advisor).recommend(WORKLOAD, pools, source="test", image="two words")


def test_mig_and_vgpu_pools_request_their_resources(answer) -> None:  # type: ignore[no-untyped-def]
    by_pool = {r.pool: r for r in reversed(answer.recommendations)}
    mixed = by_pool["h100-mig[mig-1g.10gb]"]
    limits = mixed.manifests[0]["spec"]["containers"][0]["resources"]["limits"]
    assert limits == {"nvidia.com/mig-1g.10gb": 4} and mixed.resource == "nvidia.com/mig-1g.10gb"
    vgpu = by_pool["l4-vgpu"]
    assert vgpu.placement == "vgpu" and vgpu.manifests[0]["spec"]["nodeSelector"] == {
        "stack-advisor.io/pool": "l4-vgpu"
    }
    assert vgpu.manifests[0]["spec"]["containers"][0]["resources"]["limits"] == {
        "nvidia.com/gpu": 1
    }


def test_a_serving_job_larger_than_a_node_becomes_a_leader_worker_set(kb_advisor, pools) -> None:  # type: ignore[no-untyped-def]
    """As docs/placement.md's table says for ``--target pod`` across nodes: serving (an
    inference benchmark) is a LeaderWorkerSet, never a training operator's PyTorchJob."""
    result = ClusterAdvisor(kb_advisor).recommend(
        WORKLOAD, pools, source="test", gpus=16, top=20, image=IMAGE
    )
    assert {r.pool for r in result.recommendations} == {"a100-bm"}
    assert "needs 16 nodes" in result.excluded_pools["t4-pool"]
    top = result.recommendations[0]
    assert top.shape.model_dump() == {"units_per_pod": 8, "pods": 2, "total_units": 16}
    (lws,) = top.manifests
    assert lws["kind"] == "LeaderWorkerSet" and lws["spec"]["leaderWorkerTemplate"]["size"] == 2
    assert top.job_value == pytest.approx(top.value * 16)
    template = lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]
    assert template["spec"]["nodeSelector"] == {"stack-advisor.io/pool": "a100-bm"}
    assert template["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": 8}
    _valid_pod(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "worker", **template.get("metadata", {})},
            "spec": template["spec"],
        }
    )
    assert any("linearly" in w for w in top.warnings)


def test_what_if_driver_upgrade_unlocks_cuda_12_stacks(kb_advisor, pools) -> None:  # type: ignore[no-untyped-def]
    result = ClusterAdvisor(kb_advisor).recommend(
        WORKLOAD,
        pools,
        source="test",
        top=100,
        what_if_driver={"t4-pool": "550.54.15"},
        image=IMAGE,
    )
    (report,) = result.what_if
    assert (report.pool, report.driver_from, report.driver_to) == (
        "t4-pool",
        "470.82.01",
        "550.54.15",
    )
    assert report.unlocked_candidates > 0 and report.unlocked_stacks
    assert report.best_before is not None and report.best_after is not None
    assert report.gain == pytest.approx(report.best_after.score / report.best_before.score)
    assert "t4-pool" in report.summary
    t4 = [r for r in result.recommendations if r.pool == "t4-pool"]
    assert all(r.driver == "550.54.15" for r in t4)
    assert any(_cuda_major(r.stack) == 12 for r in t4)  # re-ranked as if upgraded
    # its manifests say the pool runs another driver now (a probe's carried only the old one)
    for r in t4:
        annotations = r.manifests[0]["metadata"]["annotations"]
        assert annotations["stack-advisor/pool-driver"] == "470.82.01"
        assert annotations["stack-advisor/what-if-driver"].startswith("550.54.15: ranked as if")
    others = [r for r in result.recommendations if r.pool != "t4-pool"]
    assert others and not any(
        "stack-advisor/what-if-driver" in r.manifests[0]["metadata"]["annotations"] for r in others
    )
    with pytest.raises(InvalidInput, match="no pool named 't4pool'; did you mean t4-pool"):
        ClusterAdvisor(kb_advisor).recommend(
            WORKLOAD, pools, source="test", what_if_driver={"t4pool": "550"}
        )
    with pytest.raises(InvalidInput, match="not a driver version"):
        ClusterAdvisor(kb_advisor).recommend(
            WORKLOAD, pools, source="test", what_if_driver={"t4-pool": "latest"}
        )


def test_the_api_answers_for_a_nodes_list(kb_advisor, mlperf_store, answer) -> None:  # type: ignore[no-untyped-def]
    from stack_advisor.api.deps import get_advisor, get_store
    from stack_advisor.api.settings import Settings
    from stack_advisor.server import create_app

    app = create_app(Settings(environment="development", read_auth="open"), store=mlperf_store)
    app.dependency_overrides[get_store] = lambda: mlperf_store
    app.dependency_overrides[get_advisor] = lambda: kb_advisor
    with TestClient(app, raise_server_exceptions=False) as client:
        body = {"workload": WORKLOAD, "nodes": POOL_NODES, "top": 100, "image": IMAGE}
        response = client.post("/v1/recommendations", json=body)
        assert response.status_code == 200, response.text
        data = response.json()
        assert [(r["pool"], r["stack_id"], r["basis"]) for r in data["recommendations"]] == [
            (r.pool, r.stack_id, r.basis.value) for r in answer.recommendations
        ]
        # the image given in the workload is the same request (a probe got manifests from one
        # and the image's stack warnings from the other)
        in_workload = {
            "workload": {**WORKLOAD, "image": IMAGE},
            "nodes": POOL_NODES,
            "top": 100,
        }
        same = client.post("/v1/recommendations", json=in_workload).json()["recommendations"]
        assert [(r["pool"], r["stack_id"], r["warnings"], r["manifests"]) for r in same] == [
            (r["pool"], r["stack_id"], r["warnings"], r["manifests"])
            for r in data["recommendations"]
        ]
        assert any(r["manifests"] for r in same)
        # `kubectl get nodes -o json` pasted whole (a NodeList) is read as its items
        listed = {"apiVersion": "v1", "kind": "NodeList", "items": POOL_NODES}
        whole = client.post("/v1/recommendations", json={**body, "nodes": listed})
        assert whole.status_code == 200, whole.text
        assert [r["stack_id"] for r in whole.json()["recommendations"]] == [
            r["stack_id"] for r in data["recommendations"]
        ]
        odd = client.post("/v1/recommendations", json={**body, "nodes": {"metadata": {}}})
        assert odd.status_code == 422 and "expected Node objects" in odd.text
        what_if = client.post(
            "/v1/recommendations", json={**body, "what_if_driver": {"t4-pool": "550.54.15"}}
        )
        assert (
            what_if.status_code == 200 and what_if.json()["what_if"][0]["unlocked_candidates"] > 0
        )
        both = client.post("/v1/recommendations", json={**body, "cluster": "prod"})
        assert both.status_code == 422 and "cluster or nodes, not both" in both.text
        stray = client.post("/v1/recommendations", json={"workload": WORKLOAD, "gpus": 4})
        assert stray.status_code == 422 and "gpus need cluster or nodes" in stray.text
        missing = client.post("/v1/recommendations", json={"workload": WORKLOAD, "cluster": "prod"})
        assert missing.status_code == 404 and "no inventory named 'prod'" in missing.text


def _h100_vm(name: str, pool: str, driver: str) -> dict[str, Any]:
    from tests.support.gfd_nodes import NFD, node

    return node(
        name,
        {
            "stack-advisor.io/pool": pool,
            "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
            "nvidia.com/gpu.count": "1",
            "nvidia.com/cuda.driver-version.full": driver,
            NFD + "cpu-cpuid.HYPERVISOR": "true",
        },
        gpus="1",
    )


def test_measured_on_the_pool_beats_observed_elsewhere(kb_advisor) -> None:  # type: ignore[no-untyped-def]
    """The starter knowledge base holds our own cnn/resnet50 run on host 'vm' (H100 passthrough,
    driver 580, CUDA 13): on a pool holding that node it is measured, on a twin pool observed, and
    a pool on driver 535 cannot run its CUDA 13 stack."""
    nodes = [
        _h100_vm("vm", "h100-ours", "580.159.04"),
        _h100_vm("vm-twin", "h100-twin", "580.159.04"),
        _h100_vm("vm-old", "h100-old", "535.161.08"),
    ]
    result = ClusterAdvisor(kb_advisor).recommend(
        {"family": "cnn", "benchmark": "resnet50"},
        group_pools(nodes_from_json(nodes)),
        source="test",
    )
    by_pool = {r.pool: r for r in result.recommendations}
    assert by_pool["h100-ours"].basis is PoolBasis.MEASURED
    assert by_pool["h100-twin"].basis is PoolBasis.OBSERVED
    assert (
        by_pool["h100-ours"].value == by_pool["h100-twin"].value
        and by_pool["h100-ours"].unit == "images/s"
    )
    assert by_pool["h100-ours"].evidence.sources == ["stack-advisor-collector"]
    assert (
        "h100-old" not in by_pool
        and "need a newer driver than 535.161.08" in result.excluded_pools["h100-old"]
    )


@pytest.mark.slow  # ~16 s: two full cluster answers over the starter knowledge base
def test_a_recorded_inventory_and_a_nodes_file_give_the_same_answer(
    kb_advisor, mlperf_store, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    """`--cluster NAME` (what `advisor nodes sync` recorded) and `--nodes FILE` (`kubectl get nodes
    -o json`) are two ways to the same pools and the same ranking (the real apiserver version of
    this is in tests/kube/test_cluster_recommend.py)."""
    import json

    from stack_advisor.cli.cluster_recommend import load_pools
    from stack_advisor.schema.inventory import parse_node

    mlperf_store.sync_inventory("prod", [parse_node(n).model_dump(mode="json") for n in POOL_NODES])
    path = tmp_path / "nodes.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": POOL_NODES}))
    recorded, source = load_pools(mlperf_store, cluster="prod", nodes_file=None, pool_label=None)
    offline, _ = load_pools(mlperf_store, cluster=None, nodes_file=str(path), pool_label=None)
    assert source == "cluster prod" and recorded == offline
    cluster = ClusterAdvisor(kb_advisor)
    a = cluster.recommend(WORKLOAD, recorded, source="a", top=100, image=IMAGE).model_dump(
        exclude={"elapsed_ms", "source"}
    )
    b = cluster.recommend(WORKLOAD, offline, source="b", top=100, image=IMAGE).model_dump(
        exclude={"elapsed_ms", "source"}
    )
    assert a == b
    with pytest.raises(InvalidInput, match="give one"):
        load_pools(mlperf_store, cluster="prod", nodes_file=str(path), pool_label=None)


def test_a_pool_figure_derived_from_another_scenario_says_so_once(kb_advisor) -> None:  # type: ignore[no-untyped-def]
    """deepseek-r1's Interactive (set by the rules from v6.0; the starter knowledge base holds its
    Server) is derived from Server on the pool too: the answer carries the pool figure's own note
    of how it was derived, not also the ranked candidate's (which named another basis)."""
    from stack_advisor.advisor.estimate.scenario import is_derived_note

    nodes = _b200_nodes("b200", "580.65.06")
    result = ClusterAdvisor(kb_advisor).recommend(
        {"benchmark": "deepseek-r1", "scenario": "Interactive"},
        group_pools(nodes_from_json(nodes)),
        source="test",
    )
    assert result.recommendations
    for rec in result.recommendations:
        notes = [w for w in rec.warnings if is_derived_note(w)]
        assert len(notes) == 1 and "by the Interactive/Server ratio of" in notes[0], rec.warnings


def test_every_pool_row_answers_for_the_round_asked(kb_advisor, pools) -> None:  # type: ignore[no-untyped-def]
    """The workload's ``as_of`` reaches every figure of the cluster mode, the pool's own
    predictions included (issue 41: they had been asked for today's round whatever was asked),
    and each row names its round."""
    cluster = ClusterAdvisor(kb_advisor)
    held = cluster.recommend({**WORKLOAD, "as_of": "now"}, pools, source="test", top=100)
    ahead = cluster.recommend({**WORKLOAD, "as_of": "v7.0"}, pools, source="test", top=100)
    assert held.recommendations and ahead.recommendations
    rounds = set(kb_advisor.table().round.vocab)
    assert {r.round for r in held.recommendations} <= rounds
    assert not [w for r in held.recommendations for w in r.warnings if "a forecast for" in w]
    for r in ahead.recommendations:
        forecasts = {w.split(",")[0] for w in r.warnings if w.startswith("a forecast for")}
        assert forecasts <= {"a forecast for v7.0"}
        assert r.round in {"v7.0", *rounds}  # a stack's own result: its round
    assert any(r.round == "v7.0" for r in ahead.recommendations)
    # each row shows how its figure was made, as predict does (a probe found no factors at
    # all), and a figure carried to v7.0 never also says it is a stack's result as measured
    moved = [r for r in ahead.recommendations if r.round == "v7.0" and r.basis.value != "proxy"]
    assert moved and all(r.factors for r in moved)
    for r in moved:
        assert any(f.name in ("forecast", "round drift", "stack") for f in r.factors), r.factors
        assert not [w for w in r.warnings if w.startswith("as measured with this stack")]


def test_a_driver_that_makes_a_pool_usable_has_nothing_before(kb_advisor) -> None:  # type: ignore[no-untyped-def]
    """A B200 pool on driver 550 runs nothing (Blackwell needs 570): upgrading it has no "before"
    row (a probe got a 'best before' on 550 from an H200 candidate, gain 1.00)."""
    pools = group_pools(nodes_from_json(_b200_nodes("b200-old", "550.90.07")))
    workload = {"benchmark": "llama2-70b-99", "scenario": "Server"}
    result = ClusterAdvisor(kb_advisor).recommend(
        workload, pools, source="test", top=20, what_if_driver={"b200-old": "570.124.06"}
    )
    (report,) = result.what_if
    assert report.best_before is None and report.gain is None
    assert report.best_after is not None
    assert "makes it usable" in report.summary and "driver 550.90.07 runs none" in report.summary


def _b200_nodes(pool: str, driver: str, product: str = "NVIDIA-B200") -> list[dict[str, Any]]:
    """Two 8-GPU nodes (B200, or ``product``) of ``pool`` on ``driver``, as GPU feature discovery
    labels them."""
    from tests.support.gfd_nodes import node

    labels = {
        "stack-advisor.io/pool": pool,
        "nvidia.com/gpu.product": product,
        "nvidia.com/gpu.count": "8",
        "nvidia.com/cuda.driver-version.full": driver,
    }
    return [node(f"b200-{i}", labels, gpus="8") for i in range(2)]


def test_a_pool_of_an_unknown_part_says_why_it_has_no_answer(kb_advisor) -> None:  # type: ignore[no-untyped-def]
    """A GPU product the catalogue lacks and the knowledge base holds no result under: the pool
    is excluded with the model's own reason (a probe read "no stack in the knowledge base runs
    on it" and a note promising figures "transferred from the name alone")."""
    pools = group_pools(nodes_from_json(_b200_nodes("foo-pool", "580.95.05", "NVIDIA-Foo-9000")))
    result = ClusterAdvisor(kb_advisor).recommend(LLAMA_OFFLINE, pools, source="test", top=5)
    assert result.recommendations == []
    why = result.excluded_pools["foo-pool"]
    assert why.startswith("no figure for any stack on it: the model refused"), why
    assert "unknown accelerator 'NVIDIA Foo 9000'" in why
    (note,) = [n for n in result.notes if "foo-pool" in n]
    assert "only results held under that name answer for it" in note


def test_a_pool_never_shows_one_answer_twice(kb_advisor) -> None:  # type: ignore[no-untyped-def]
    """A stack whose framework field names TensorRT 9.3.0 beside its components' TensorRT 10.2.0
    is asked on a pool as the 10.2.0 stack is: a probe read the same observed figure and
    submitters twice, under two labels."""
    nodes = _b200_nodes("h100-pool", "550.54.15", "NVIDIA-H100-80GB-HBM3")
    pools = group_pools(nodes_from_json(nodes))
    result = ClusterAdvisor(kb_advisor).recommend(LLAMA_OFFLINE, pools, source="test", per_pool=20)
    rows = [(r.basis, r.value, tuple(r.evidence.submitters)) for r in result.recommendations]
    assert len(rows) >= 3 and len(rows) == len(set(rows)), rows


def test_malformed_gfd_labels_are_named_and_ignored_not_read(kb_advisor) -> None:  # type: ignore[no-untyped-def]
    """A GFD label of the wrong shape (a hand-edited or broken labeller's value) is named on its
    node, its pool and the cluster answer's notes, and ignored: the count is read from the node's
    allocatable GPUs, the driver from its version parts; it never becomes a figure."""
    import copy

    first = copy.deepcopy(POOL_NODES[0])  # p-a100-0: 8x A100, driver 550.54.15 (GFD >= 0.15)
    labels = first["metadata"]["labels"]
    labels["nvidia.com/gpu.count"] = "eight"
    labels["nvidia.com/gpu.memory"] = "80GB"
    labels["nvidia.com/cuda.driver-version.full"] = "550.54.15-beta"
    nodes = nodes_from_json([first, *POOL_NODES[1:]])
    node = nodes[0]
    assert node.label_problems == [
        "nvidia.com/cuda.driver-version.full='550.54.15-beta' is not a version such as "
        "550.54.15: ignored",
        "nvidia.com/gpu.count='eight' is not a whole number: ignored",
        "nvidia.com/gpu.memory='80GB' is not a whole number: ignored",
    ]
    assert node.accelerator is not None
    assert (node.accelerator.count, node.accelerator.memory_mib) == (8, None)
    assert node.driver == "550.54.15"  # from major, minor and revision
    assert node.row()["label_problems"].startswith("nvidia.com/cuda.driver-version.full=")
    assert all(not n.label_problems for n in nodes[1:])
    pools = group_pools(nodes)
    pool = next(p for p in pools if "p-a100-0" in p.nodes)
    assert pool.label_problems == [f"{p} (on p-a100-0)" for p in node.label_problems]
    answer = ClusterAdvisor(kb_advisor).recommend(WORKLOAD, pools, source="test", top=5)
    note = f"pool {pool.name}: nvidia.com/gpu.count='eight' is not a whole number: ignored"
    assert f"{note} (on p-a100-0)" in answer.notes
    assert answer.recommendations  # the rest of the cluster is answered as before


def test_gfd_label_shapes_as_gfd_writes_them_are_not_problems() -> None:
    """GFD writes an empty revision for a two-part driver (418.67): not a problem. A value that
    only looks like a number once trimmed, or is a digit of another script, is one."""
    from stack_advisor.schema.inventory import label_problems

    two_part = {
        "nvidia.com/cuda.driver.major": "418",
        "nvidia.com/cuda.driver.minor": "67",
        "nvidia.com/cuda.driver.rev": "",
        "nvidia.com/cuda.driver-version.revision": "",
        "nvidia.com/cuda.driver-version.full": "418.67",
        "nvidia.com/gpu.product": "Tesla-V100-SXM2-16GB",
        "nvidia.com/gpu.family": "volta",
    }
    assert label_problems(two_part) == []
    odd = {"nvidia.com/gpu.count": "\u00b2", "nvidia.com/cuda.driver-version.full": " 550.54.15 "}
    assert [p.split("=")[0] for p in label_problems(odd)] == [
        "nvidia.com/cuda.driver-version.full",
        "nvidia.com/gpu.count",
    ]


def _vendor_node(name: str, labels: dict[str, str], resource: str, count: str) -> dict[str, Any]:
    """A node whose GPUs another vendor's device plugin offers (``resource``), labelled by that
    vendor's labeller (``labels``), as the API returns it."""
    from tests.support.gfd_nodes import node

    raw = node(name, labels)
    for field in ("capacity", "allocatable"):
        raw["status"][field][resource] = count
    return raw


def test_amd_and_intel_gpu_nodes_are_gpu_pools_not_cpu_pools(kb_advisor) -> None:  # type: ignore[no-untyped-def]
    """A probe's 8x MI300X pool, labelled by AMD's node labeller, had been read as a CPU-only
    pool and told to run the plan's CPU benchmarks. Its GPUs are its vendor's resource: the pool
    names the part, requests amd.com/gpu, selects by the labeller's product label and is ranked;
    a Gaudi node (a resource, no product label) is no CPU pool either."""
    from stack_advisor.advisor.cluster.cpu_pools import all_pools

    amd = {
        "stack-advisor.io/pool": "mi300x-pool",
        "amd.com/gpu.product-name": "AMD_Instinct_MI300X_OAM",
    }
    intel = {"gpu.intel.com/product": "Max_1550"}
    nodes = [
        _vendor_node("mi300x-0", amd, "amd.com/gpu", "8"),
        _vendor_node("max-0", intel, "gpu.intel.com/i915", "4"),
        _vendor_node("gaudi-0", {"stack-advisor.io/pool": "gaudi-pool"}, "habana.ai/gaudi", "8"),
    ]
    pools = {p.name: p for p in all_pools(nodes_from_json(nodes))}
    assert "gaudi-pool" not in pools  # its GPUs are unnamed, not absent
    mi300x = pools["mi300x-pool"]
    assert (mi300x.kind, mi300x.accelerator, mi300x.resource) == ("gpu", "MI300X", "amd.com/gpu")
    assert mi300x.gpus_per_node == 8 and mi300x.usable
    (max_pool,) = [p for p in pools.values() if p.accelerator == "Max-1550"]
    assert max_pool.resource == "gpu.intel.com/i915" and max_pool.gpus_per_node == 4
    # no pool label: the vendor's product label selects its nodes
    assert max_pool.node_selector["gpu.intel.com/product"] == "Max_1550"
    assert "nvidia.com/gpu.product" not in max_pool.node_selector
    result = ClusterAdvisor(kb_advisor).recommend(LLAMA_OFFLINE, [mi300x], source="test", top=3)
    assert result.recommendations and "mi300x-pool" not in result.excluded_pools
    assert all(r.pool == "mi300x-pool" for r in result.recommendations)


def test_negative_gpu_counts_are_ignored_not_fatal_to_the_file() -> None:
    """A hand-written node with ``nvidia.com/gpu.count=-8`` and ``nvidia.com/gpu: -4`` had failed
    the whole --nodes file ("1 validation error for Accelerator"); the label is a named label
    problem, and the pool says it has nothing allocatable."""
    from tests.support.gfd_nodes import node

    labels = {"stack-advisor.io/pool": "neg-pool", "nvidia.com/gpu.product": "NVIDIA-H200"}
    raw = node("neg-0", {**labels, "nvidia.com/gpu.count": "-8"}, gpus="-4")
    (parsed,) = nodes_from_json([raw])
    assert parsed.accelerator is not None and parsed.accelerator.count == 1
    assert any("gpu.count" in p for p in parsed.label_problems)
    (pool,) = group_pools([parsed])
    assert not pool.usable and "no allocatable nvidia.com/gpu" in (pool.reason or "")


def test_a_vendor_node_is_selected_by_its_labeller_and_its_parts_plugin() -> None:
    """Intel's xe and i915 plugins share one product label: a node offering neither resource
    yet is read with the plugin of its part's generation (Max 1550: i915); ``advisor nodes``
    groups an AMD node without a pool label by its product label, not by its hostname."""
    from stack_advisor.schema.inventory import vendor_plugin
    from tests.support.gfd_nodes import node

    max_plugin = vendor_plugin({"gpu.intel.com/product": "Max_1550"})
    assert max_plugin is not None and max_plugin.resource == "gpu.intel.com/i915"
    b70 = vendor_plugin({"gpu.intel.com/product": "Intel_Arc_Pro_B70"})
    assert b70 is not None and b70.resource == "gpu.intel.com/xe"
    (amd,) = nodes_from_json(
        [node("mi-0", {"amd.com/gpu.product-name": "AMD_Instinct_MI300X_OAM"})]
    )
    assert amd.selector() == {"amd.com/gpu.product-name": "AMD_Instinct_MI300X_OAM"}
