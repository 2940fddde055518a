"""What a refused query says names what is wrong (a probe of issue 41 found a garbled one):
a metric the benchmark never recorded lists those it did; a scenario asked of MLPerf Training,
which has none, says so. On the starter knowledge base."""

from __future__ import annotations

from typing import Any

import pytest

TRAINING = {
    "family": "mlperf-training",
    "accelerator": "NVIDIA H100-SXM5-80GB",
    "accelerator_count": 8,
    "benchmark": "bert",
}


def test_a_metric_the_benchmark_never_recorded_lists_the_recorded_ones(kb_advisor: Any) -> None:
    [answer] = kb_advisor.predict([{**TRAINING, "metric": "samples_per_second"}])
    assert answer.basis.value == "unsupported"
    assert answer.reason.startswith("unknown metric: 'samples_per_second' never recorded for bert")
    assert "time_to_train_min" in answer.reason


def test_a_scenario_asked_of_training_is_refused_saying_it_has_none(kb_advisor: Any) -> None:
    [answer] = kb_advisor.predict(
        [{**TRAINING, "metric": "time_to_train_min", "scenario": "Offline"}]
    )
    assert answer.basis.value == "unsupported"
    assert "has no scenarios ('Offline'); leave it out" in answer.reason


def test_a_reference_implementation_asked_as_published_is_observed(kb_advisor: Any) -> None:
    """A result of MLCommons' reference code (its system folder says so: ``implementation:
    reference``) asked with that implementation is its own observation, not refused as the
    framework's optimised class (the explorer's advisor figure for such a row had been)."""
    index = kb_advisor.evidence()
    table = index.table
    for key, by_acc in index.slices.items():
        if key[0] != "mlperf-inference" or not index.higher_is_better(key):
            continue
        for acc, rows in by_acc.items():
            for r in rows.tolist():
                stack = table.stacks[table.stack.vocab[int(table.stack.codes[r])]]
                if stack.extra.get("implementation") != "reference" or not stack.framework:
                    continue
                if not stack.framework_version:
                    continue
                query = {
                    "accelerator": index.raw_names.get(acc, acc),
                    "accelerator_count": int(table.count[r]),
                    "placement": table.placement.vocab[int(table.placement.codes[r])],
                    "components": {
                        stack.framework: stack.framework_version,
                        "implementation": "reference",
                    },
                    "framework": stack.framework,
                    "benchmark": key[1],
                    "scenario": key[2],
                    "metric": key[3],
                    "parameters": {"division": key[4]},
                    "as_of": "now",
                }
                [answer] = kb_advisor.predict([query])
                if answer.basis.value == "unsupported" and "software class" in (
                    answer.reason or ""
                ):
                    raise AssertionError(answer.reason)
                assert answer.basis.value == "observed", answer
                return
    pytest.skip("the starter knowledge base holds no reference-implementation result")


def test_a_query_without_a_metric_is_answered_in_the_slice_s_throughput(kb_advisor: Any) -> None:
    """A query names a benchmark and scenario and leaves the metric out, as the CLI's flags do:
    answered in the throughput most of the slice's results record, and the answer says so; the
    same query with that metric named gives the same figure."""
    asked = {"accelerator": "H200", "accelerator_count": 8, "benchmark": "llama2-70b-99"}
    left_out, named = kb_advisor.predict(
        [
            {**asked, "scenario": "Server"},
            {**asked, "scenario": "Server", "metric": "tokens_per_second"},
        ]
    )
    assert left_out.basis.value != "unsupported", left_out.reason
    assert left_out.query.metric == "tokens_per_second"
    assert left_out.value == named.value
    assert left_out.warnings[0].startswith("metric: none named; answered in tokens_per_second")
    assert "ttft_p99_ms" in left_out.warnings[0]  # the others it could have asked for
    [training] = kb_advisor.predict([TRAINING])
    assert training.query.metric == "time_to_train_min"
    assert "its time to train" in training.warnings[0]


def test_no_metric_and_no_scenario_names_the_scenarios(kb_advisor: Any) -> None:
    [answer] = kb_advisor.predict(
        [{"accelerator": "H200", "accelerator_count": 8, "benchmark": "llama2-70b-99"}]
    )
    assert answer.basis.value == "unsupported"
    assert answer.reason.startswith("scenario needed: llama2-70b-99 has several; name one of")
    assert "Offline" in answer.reason and "Server" in answer.reason


@pytest.mark.parametrize(
    ("written", "meant"),
    [
        ("count", "accelerator_count"),
        ("gpus", "accelerator_count"),
        ("model", "benchmark"),
        ("stack", "framework"),  # predict --stack fills a query's framework
        ("gpu", "accelerator"),
    ],
)
def test_a_field_spelled_as_the_cli_flag_says_which_field_it_meant(
    kb_advisor: Any, written: str, meant: str
) -> None:
    query = {"accelerator": "H200", "benchmark": "llama2-70b-99", "scenario": "Offline"}
    [answer] = kb_advisor.predict([{**query, written: 8}])
    assert answer.basis.value == "unsupported"
    assert f"{written}: did you mean {meant}?" in answer.reason


def test_the_nodes_driver_alone_picks_no_results(kb_advisor: Any) -> None:
    """A driver is the nodes' (judged for whether the stack runs, as ``recommend --driver``): a
    query naming only a driver the GPU supports is answered as the same query without it (a
    probe found it turned an observed answer interpolated, or picked the one result that named
    that driver)."""
    asked = {
        "accelerator": "B200",
        "accelerator_count": 8,
        "benchmark": "llama2-70b-99",
        "scenario": "Offline",
    }
    plain, *with_driver = kb_advisor.predict(
        [asked, *({**asked, "components": {"driver": d}} for d in ("580.65.06", "575.57.08"))]
    )
    assert plain.basis.value == "observed"
    for answer in with_driver:
        assert (answer.basis, answer.value, answer.interval) == (
            plain.basis,
            plain.value,
            plain.interval,
        )
    [old] = kb_advisor.predict([{**asked, "components": {"driver": "450.80.02"}}])
    assert old.basis.value == "unsupported"  # still judged: too old for the part


def test_a_vm_answer_held_to_bare_metal_lists_the_placement_once(kb_advisor: Any) -> None:
    [answer] = kb_advisor.predict(
        [
            {
                "accelerator": "H100-PCIE-80GB",
                "placement": "vgpu",
                "benchmark": "resnet50",
                "scenario": "Offline",
            }
        ]
    )
    names = [f.name for f in answer.factors]
    assert names.count("placement") + names.count("placement held to bare metal") == 1
    [bare] = kb_advisor.predict(
        [{"accelerator": "H100-PCIE-80GB", "benchmark": "resnet50", "scenario": "Offline"}]
    )
    assert answer.value < bare.value


def test_a_vm_placement_of_no_result_is_its_bare_metal_answer(kb_advisor: Any) -> None:
    """No vGPU result of L40S and no pairs to learn its overhead from: the vGPU answer is the
    bare-metal answer (overhead none, said), not an interpolation over the part's other rows,
    which had come out 41% below L40S x8's own bare-metal result."""
    ask = {"accelerator": "L40S", "accelerator_count": 8, "benchmark": "llama2-70b-99"}
    ask |= {"scenario": "Server", "metric": "tokens_per_second", "as_of": "v4.1"}
    vgpu, bare = kb_advisor.predict([{**ask, "placement": "vgpu"}, ask])
    assert bare.basis.value == "observed" and vgpu.basis.value == "interpolated"
    assert vgpu.value == bare.value and vgpu.interval == bare.interval
    assert any("answered from bare metal where no result of it is held" in w for w in vgpu.warnings)


def test_a_training_benchmark_asked_without_its_family_says_which_family(kb_advisor: Any) -> None:
    [answer] = kb_advisor.predict(
        [{"accelerator": "H100", "accelerator_count": 8, "benchmark": "llama2_70b_lora"}]
    )
    assert answer.basis.value == "unsupported"
    assert 'add "family": "mlperf-training"' in answer.reason
    assert answer.query.accelerator == "H100"  # echoed as asked, not the member tried


def test_rank_stacks_says_what_to_name(kb_advisor: Any) -> None:
    """A family name lists its members that ran the slice; MLPerf Training, whose times are whole
    systems' of every size, is refused with where to ask instead (not 'name a scenario')."""
    from stack_advisor.schema.errors import InvalidInput, NotFound

    with pytest.raises(NotFound, match="'H100' names a family; name the member") as family:
        kb_advisor.rank_stacks(benchmark="llama2-70b-99", scenario="Offline", accelerator="H100")
    assert "H100-SXM5-80GB" in str(family.value)
    with pytest.raises(InvalidInput, match="a time to train is a whole system's"):
        kb_advisor.rank_stacks(
            family="mlperf-training", benchmark="bert", accelerator="H100-SXM5-80GB"
        )


def test_a_cost_ranking_says_where_it_read_the_default_price(kb_advisor: Any) -> None:
    """The packaged price table lists some parts; a row scored at the table's default price says
    so (a probe found B200 and H200 ranked on a $2.0 nobody gave for them, unsaid)."""
    ranked = kb_advisor.recommend(
        {"benchmark": "resnet50", "scenario": "Offline", "objective": "cost"}, top=50
    )
    said = {
        r.candidate.accelerator: any(
            w.startswith("cost: the price table has no row") for w in r.warnings
        )
        for r in ranked.recommendations
    }
    assert said.get("H100-SXM5-80GB") is False  # priced in the table
    assert any(said.values())  # some part only the default prices


def test_a_training_query_on_a_vm_says_no_overhead_was_learned(kb_advisor: Any) -> None:
    """MLPerf Training holds no VM results: a vgpu query is the bare-metal figure, saying the
    placement's overhead is assumed none (as an inference interpolation says), with no count
    scaling from a count to itself (a probe found 'x8 → x8' listed as the factor)."""
    vm, bare = kb_advisor.predict([{**TRAINING, "placement": "vgpu"}, TRAINING])
    assert vm.value == bare.value
    assert any(w.startswith("no paired results for vgpu on") for w in vm.warnings)
    assert not [f for f in vm.factors if f.name == "count scaling"]


def test_a_refused_query_without_a_metric_leads_with_its_reason(kb_advisor: Any) -> None:
    """A query with no metric that is refused (70 GB of weights on one 24 GB A30) says why first,
    not that it was 'answered in' a metric (a probe found the refusal's table row led by the
    metric note)."""
    [answer] = kb_advisor.predict(
        [{"accelerator": "A30", "benchmark": "llama2-70b-99", "scenario": "Offline"}]
    )
    assert answer.basis.value == "unsupported"
    assert answer.reason.startswith("model does not fit in memory")
    assert not any(w.startswith("metric: none named") for w in answer.warnings)


def test_a_component_that_is_no_version_is_refused_naming_it(kb_advisor: Any) -> None:
    """A driver "abc", "570.26.x" or "" skipped every rule that judges the driver (a probe got
    B200 answered as runnable, observed); each is that query's refusal, the others answer."""
    asked = {"accelerator": "B200", "accelerator_count": 8, "benchmark": "llama2-70b-99"}
    given = [{"driver": "abc"}, {"driver": "570.26.x"}, {"driver": ""}, {"cuda": "twelve"}]
    answers = kb_advisor.predict(
        [{**asked, "scenario": "Offline", "components": c} for c in given]
        + [{**asked, "scenario": "Offline", "components": {"driver": "580.65.06"}}]
    )
    for c, a in zip(given, answers):
        ((name, value),) = c.items()
        assert a.basis.value == "unsupported"
        assert a.reason == (
            f"components: {name} {value!r} is not a version (write e.g. "
            + ("570.133.20" if name == "driver" else "12.4 or 2.3.0")
            + ", or leave it out)"
        )
    assert answers[-1].basis.value != "unsupported"


def test_compare_names_every_component_its_help_lists(kb_advisor: Any) -> None:
    """``compare regressions --component framework_version`` (listed in its help) said no stack
    records it, and ``compare stacks --a rocm=...`` never matched: a stack's extras (ROCm) and
    its framework's version are components a user can name; versions of two frameworks are
    never compared with each other."""
    found = kb_advisor.regressions("framework_version", alpha=1.0, min_count=1)
    assert found
    for r in found:
        assert r.older.rsplit(" ", 1)[0] == r.newer.rsplit(" ", 1)[0], r
    rocm = kb_advisor.compare("rocm=6.3.1", "rocm=6.4", benchmark="llama2-70b-99")
    assert rocm.a_count > 0


def test_a_misspelt_family_is_named_as_the_problem(kb_advisor: Any) -> None:
    """The family "mlperf-trainig" was reported as "unknown benchmark 'bert' in mlperf-trainig"."""
    (answer,) = kb_advisor.predict(
        [{"family": "mlperf-trainig", "accelerator": "H100", "benchmark": "bert"}]
    )
    assert answer.reason is not None
    assert answer.reason.startswith(
        "family: unknown family 'mlperf-trainig'; did you mean 'mlperf-training'?"
    )
    assert "unknown benchmark" not in answer.reason


def test_compare_reads_names_as_users_write_them_and_refuses_unknown_ones(
    kb_advisor: Any,
) -> None:
    """A probe: ``regressions --benchmark nosuch`` answered "no regression"; ``compare stacks``
    with --scenario Server compared the mean TTFT by default."""
    from stack_advisor.schema.errors import NotFound

    with pytest.raises(NotFound, match="benchmark: 'nosuch' is not in the knowledge base"):
        kb_advisor.regressions(benchmark="nosuch")
    assert kb_advisor.regressions("tensorrt", benchmark="sdxl") is not None  # an alias
    answer = kb_advisor.compare(
        "tensorrt=10.2", "tensorrt=10.11", benchmark="llama2-70b-99", scenario="Server"
    )
    assert answer.metric == "tokens_per_second"


def test_regressions_compare_only_one_thing_s_successive_releases(kb_advisor: Any) -> None:
    """A probe read cuDNN 9.4.0.58 -> 9.4.0.58-1 (one release packaged twice), driver 580.82 ->
    580.82.07 (one written shorter) and pytorch 2.8.0 -> 25.04 (a PyTorch version, then an NGC
    container release) as upgrades."""
    from stack_advisor.advisor.verbs.compare import an_upgrade
    from stack_advisor.catalog.rounds import release_of
    from stack_advisor.catalog.stack_facts import ngc_release_of

    assert not an_upgrade("9.4.0.58", "9.4.0.58-1") and not an_upgrade("580.82", "580.82.07")
    assert not an_upgrade("pytorch 2.8.0", "pytorch 25.04")
    assert not an_upgrade("tensorrt 10.2", "pytorch 2.8.0")
    assert an_upgrade("9.1.0.70", "9.4.0.58") and an_upgrade("pytorch 25.04", "pytorch 25.09")
    seen = 0
    for component in ("cudnn", "driver", "framework_version"):
        for r in kb_advisor.regressions(component, alpha=1.0):  # every slower pair: the pairing
            old, new = r.older.rsplit(" ", 1)[-1], r.newer.rsplit(" ", 1)[-1]
            a, b = release_of(old) or (), release_of(new) or ()
            assert a[: len(b)] != b and b[: len(a)] != a, (r.older, r.newer)
            assert (ngc_release_of(old) is None) == (ngc_release_of(new) is None), r
            seen += 1
    assert seen > 0


def test_a_latency_read_off_other_parts_is_refused_with_its_runs_throughput(
    kb_advisor: Any,
) -> None:
    """Jetson AGX Orin x8 on llama2-70b Interactive: its throughput is refused (no reference of
    its device class), so a p99 TTFT read off other NVIDIA parts is too (a probe found it ranked
    fifth-lowest by latency); a part's own share of the limit on other models still answers."""
    ask = {"accelerator": "Jetson AGX Orin", "accelerator_count": 8, "benchmark": "llama2-70b-99"}
    ask |= {"scenario": "Interactive"}
    run, latency = kb_advisor.predict(
        [{**ask, "metric": "tokens_per_second"}, {**ask, "metric": "ttft_p99_ms"}]
    )
    assert run.basis.value == "unsupported" and latency.basis.value == "unsupported"
    assert latency.reason.startswith("ttft_p99_ms: its tokens_per_second in Interactive cannot")
    assert run.reason in latency.reason
    (own,) = kb_advisor.predict([{**ask, "accelerator": "H100-NVL-94GB", "metric": "ttft_p99_ms"}])
    assert own.value is not None and "H100-NVL-94GB" in own.references


def test_a_server_estimate_is_at_most_the_configurations_offline_estimate(
    kb_advisor: Any,
) -> None:
    """A Server run is latency-bound, Offline not: an estimated Server throughput is held to the
    same configuration's Offline estimate, saying so (a probe's MI355X x8 llama3.1-8b read
    89,497 tokens/s Server beside 80,987 Offline)."""
    for accelerator in ("MI355X", "TPU v6e", "GB200"):
        ask = {"accelerator": accelerator, "accelerator_count": 8, "benchmark": "llama3.1-8b"}
        ask |= {"metric": "tokens_per_second"}
        server, offline = kb_advisor.predict(
            [{**ask, "scenario": "Server"}, {**ask, "scenario": "Offline"}]
        )
        assert server.value is not None and offline.value is not None, (server, offline)
        assert server.value <= offline.value, (accelerator, server.value, offline.value)
        assert server.interval.high <= offline.interval.high * (1 + 1e-9), accelerator
