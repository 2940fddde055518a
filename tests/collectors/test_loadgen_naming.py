"""Our own LoadGen runs are recorded under the catalogue's benchmark name of the model they
serve, so they pair with MLPerf's published results of that benchmark."""

from __future__ import annotations

from stack_advisor.collectors.runners.loadgen_params import FAMILY, benchmark_of


def test_a_catalogue_model_is_recorded_as_its_mlperf_benchmark() -> None:
    assert benchmark_of("resnet50") == ("mlperf-inference", "resnet50")
    assert benchmark_of("ResNet-50") == ("mlperf-inference", "resnet50")


def test_the_catalogue_names_the_family() -> None:
    assert benchmark_of("small_cnn") == ("cnn", "small_cnn")  # the project's own CNN benchmark


def test_a_model_the_catalogue_lacks_keeps_its_own_name() -> None:
    assert benchmark_of("zz-unknown-net") == (FAMILY, "zz-unknown-net")
