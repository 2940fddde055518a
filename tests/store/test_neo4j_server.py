"""The Neo4j server the suite runs against is real, answers Cypher over Bolt, and is 5.26.x."""

from __future__ import annotations

import neo4j
import pytest

pytestmark = pytest.mark.neo4j


def test_bolt_answers_cypher(neo4j_uri: str) -> None:
    with neo4j.GraphDatabase.driver(neo4j_uri) as driver:
        driver.verify_connectivity()
        records, _, _ = driver.execute_query("RETURN 1 AS one", database_="neo4j")
    assert [r["one"] for r in records] == [1]


def test_server_is_neo4j_5_26(neo4j_uri: str) -> None:
    with neo4j.GraphDatabase.driver(neo4j_uri) as driver:
        records, _, _ = driver.execute_query(
            "CALL dbms.components() YIELD name, versions, edition RETURN name, versions, edition",
            database_="neo4j",
        )
    kernel = [r for r in records if r["name"] == "Neo4j Kernel"]
    assert len(kernel) == 1, records
    assert kernel[0]["versions"][0].startswith("5.26."), kernel[0]["versions"]
    assert kernel[0]["edition"] == "community"
