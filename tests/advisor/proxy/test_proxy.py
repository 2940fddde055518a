"""Memory verdicts, work per token and the proxy's answers on the starter knowledge base."""

from __future__ import annotations

import numpy as np
import pytest

from stack_advisor.advisor.knowledge.table import ObservationTable
from stack_advisor.advisor.proxy.answer import proxy_answers
from stack_advisor.advisor.proxy.estimate import llm_benchmarks, references
from stack_advisor.advisor.proxy.memory import feasibility
from stack_advisor.advisor.proxy.model import from_catalogue
from stack_advisor.advisor.proxy.validation import summary, validate
from stack_advisor.advisor.proxy.work import Traffic, token_work
from stack_advisor.catalog import load_catalog
from stack_advisor.schema.errors import InvalidInput


def test_work_per_token_formulas() -> None:
    model = from_catalogue("llama3.1-8b")
    one = token_work(model, Traffic(isl=1, osl=1, batch=1), "fp8")
    # 2 FLOPs per active parameter for each of the two processed tokens, plus attention
    attn = 4 * model.layers * model.attn_dim * 1.0
    assert one.flops == pytest.approx((2 * model.active_params + attn) * 2)
    # a lone sequence reads every weight once per token (FP8: one byte each) and its KV cache
    assert one.bytes == pytest.approx(model.params + model.kv_elems_per_token * 1.5)
    batched = token_work(model, Traffic(isl=1, osl=1, batch=64), "fp8")
    assert batched.bytes < one.bytes / 32


def test_moe_decode_reads_the_experts_the_batch_touches() -> None:
    model = from_catalogue("mixtral-8x7b")
    lone = token_work(model, Traffic(isl=128, osl=128, batch=1), "fp8")
    # one token touches 2 of 8 experts: far fewer than all the weights
    assert lone.bytes < 0.5 * model.params
    with pytest.raises(InvalidInput, match="osl"):
        Traffic(isl=128, osl=0, batch=1)


def test_memory_smallest_count() -> None:
    model = from_catalogue("llama3.1-405b")
    one = feasibility(model, "H100-SXM5-80GB", count=1, context=2048, precision="fp8")
    assert not one.fits and one.min_count == 8 and "does not fit" in one.text
    eight = feasibility(model, "H100-SXM5-80GB", count=8, context=2048, precision="fp8")
    assert eight.fits and eight.replicas == 1
    with pytest.raises(InvalidInput, match="accelerator"):
        feasibility(model, "no-such-part", count=1, context=1)


@pytest.fixture(scope="module")
def table(kb_advisor) -> ObservationTable:  # type: ignore[no-untyped-def]
    return kb_advisor.table()


@pytest.mark.slow
def test_every_published_llm_result_fits_at_its_count(table: ObservationTable) -> None:
    """Verdicts at the published count: every MLPerf LLM x catalogue part with closed results
    fits (one sequence at the benchmark's full context, the part's narrowest format)."""
    cat = load_catalog()
    checked = 0
    for i in np.flatnonzero(table.value > 0):
        bench = table.bench_name.vocab[table.bench_name.codes[i]]
        acc = table.physical.vocab[table.physical.codes[i]]
        if bench not in llm_benchmarks() or acc not in cat.accelerators:
            continue
        if table.division.vocab[table.division.codes[i]] != "closed":
            continue
        entry = cat.benchmark("mlperf-inference", bench)
        assert entry is not None and entry.max_seq_len and entry.max_output_tokens
        context = entry.max_seq_len + entry.max_output_tokens
        verdict = feasibility(
            from_catalogue(bench), acc, count=int(table.count[i]), context=context
        )
        assert verdict.fits, verdict.text
        checked += 1
    assert checked > 100


@pytest.mark.slow
def test_leave_one_model_out_and_answers(table: ObservationTable) -> None:
    held, got = validate(table, "Offline")
    assert got["models"] >= 5 and got["n"] == len(held) > 30
    assert 0.6 <= got["coverage"] <= 0.95
    assert summary([]) == {"n": 0}
    refs = references(table, "Offline")
    assert all(r.value > 0 and r.results >= 1 for r in refs)
    answers = proxy_answers(
        table, from_catalogue("gpt-oss-120b"), isl=2048, osl=512, concurrency=64
    )
    assert answers and all(a.low < a.value < a.high for a in answers)
    assert [a.value for a in answers] == sorted((a.value for a in answers), reverse=True)
    best = answers[0]
    assert best.references and best.memory.fits and "basis proxy" in best.notes[0]
    # the model's own results never answer for it
    own = proxy_answers(table, from_catalogue("llama2-70b-99"), isl=1024, osl=1024)
    assert own and not any("llama2-70b" in r for a in own for r in a.references)


def test_published_means_have_sources_and_stay_unused_until_every_llm_has_them() -> None:
    """The catalogue's dataset means each cite where they were published; while some MLPerf LLM
    lacks a mean input, every benchmark keeps the catalogue's maxima (one described by its means
    among the others by their maxima measured worse, docs/proxy.md)."""
    from stack_advisor.advisor.proxy.estimate import benchmark_traffic

    cat = load_catalog()
    big = cat.benchmark("mlperf-inference", "llama3.1-405b")
    assert big is not None and big.mean_input_tokens and big.mean_output_tokens
    assert big.mean_input_tokens.value == 9428 and "rocm-blogs" in big.mean_input_tokens.source
    assert big.mean_output_tokens.value == pytest.approx(684.68)
    lacking = []
    for bench in llm_benchmarks():
        entry = cat.benchmark("mlperf-inference", bench)
        assert entry is not None
        for figure in (entry.mean_input_tokens, entry.mean_output_tokens):
            assert figure is None or figure.source.startswith("https://github.com/"), bench
        if entry.mean_input_tokens is None:
            lacking.append(bench)
    assert "gptj-99" in lacking  # gen_len counts characters: no token mean is published
    for bench in llm_benchmarks():
        entry = cat.benchmark("mlperf-inference", bench)
        assert entry is not None
        assert benchmark_traffic(bench) == (entry.max_seq_len, entry.max_output_tokens)
