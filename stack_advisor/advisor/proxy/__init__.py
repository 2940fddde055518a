"""Basis ``proxy``: answers for a model the knowledge base has no results for.

``model`` reads its description (a Hugging Face config.json, a short YAML, a catalogue name),
``memory`` checks that weights and KV cache fit, ``work`` counts a token's FLOPs and bytes,
``estimate`` moves the nearest published results by that work, ``validation`` holds each MLPerf
LLM out in turn to measure the errors that make the interval, and ``answer`` puts it together.
"""
