"""Every Cypher statement the stores run, written once in the subset that both Neo4j and the
embedded engine (LadybugDB) accept: no list comprehensions, no CALL {} subqueries, no dynamic
labels, no null-valued parameters in comparisons ('' stands for "any" in filters).

Labels, keys and properties come from ``stack_advisor.schema.graph``; values are always parameters.
The per-label statements are generated once at import time and are module constants after that.
"""

from __future__ import annotations

from functools import cache

from stack_advisor.schema.graph import (
    CONTEXT,
    NODE_BY_LABEL,
    NODES,
    OBSERVATION,
    RELATIONSHIPS,
    NodeSpec,
)

# ---- nodes -------------------------------------------------------------------------------


def _existing(node: NodeSpec) -> str:
    return f"UNWIND $keys AS k MATCH (n:{node.label} {{{node.key}: k}}) RETURN n.{node.key} AS key"


@cache
def create_nodes(label: str, present: frozenset[str]) -> str:
    """CREATE for one label, setting the schema properties in ``present``.

    Rows carry only the properties some row of the chunk knows: the embedded engine types an
    all-null parameter column as STRING, which an INT64 or DOUBLE property then refuses.
    """
    node = NODE_BY_LABEL[label]
    props = ", ".join(f"{p}: r.{p}" for p in node.properties if p in present or p == node.key)
    return f"UNWIND $rows AS r CREATE (n:{node.label} {{{props}}})"


@cache
def refresh_nodes(label: str, present: frozenset[str]) -> str:
    """Fill in what an existing node lacked or what changed; unknown (null) never erases."""
    node = NODE_BY_LABEL[label]
    sets = ", ".join(
        f"n.{p} = coalesce(r.{p}, n.{p})" for p in node.properties if p != node.key and p in present
    )
    match = f"UNWIND $rows AS r MATCH (n:{node.label} {{{node.key}: r.{node.key}}})"
    return f"{match} SET {sets}" if sets else f"{match} RETURN count(n) AS c"


def _list(node: NodeSpec) -> str:
    cols = ", ".join(f"n.{p} AS {p}" for p in node.properties)
    return f"MATCH (n:{node.label}) RETURN {cols} ORDER BY n.{node.key}"


def _count(node: NodeSpec) -> str:
    return f"MATCH (n:{node.label}) RETURN count(n) AS c"


EXISTING_KEYS = {n.label: _existing(n) for n in NODES}
LIST_NODES = {n.label: _list(n) for n in NODES}
COUNT_NODES = {n.label: _count(n) for n in NODES}

# The neighbours an observation, its context or a failure links to: (relationship, neighbour
# label, row column).
OBSERVATION_LINKS = (
    ("MEASURED_IN", "Context", "context_id"),
    ("OF_BENCHMARK", "Benchmark", "benchmark_id"),
    ("IN_SUBMISSION", "Submission", "submission_id"),  # published results only
)
CONTEXT_LINKS = (
    ("USES_STACK", "Stack", "stack_id"),
    ("USES_ACCELERATOR", "Accelerator", "accelerator"),
    ("USES_PLACEMENT", "Placement", "placement_id"),
    ("USES_HOST", "Host", "host"),
    ("PART_OF_RUN", "Run", "run_id"),
)
LINKS = {"Observation": OBSERVATION_LINKS, "Context": CONTEXT_LINKS}
FAILURE_LINKS = (
    ("FAILED_ON_STACK", "Stack", "stack_id"),
    ("FAILED_ON_ACCELERATOR", "Accelerator", "accelerator"),
    ("FAILED_IN_PLACEMENT", "Placement", "placement_id"),
    ("FAILED_BENCHMARK", "Benchmark", "benchmark_id"),
    ("FAILED_ON_HOST", "Host", "host"),
)


@cache
def create_linked(label: str, present: frozenset[str], linked: frozenset[str]) -> str:
    """CREATE observations (or failures) and their edges in one statement.

    ``linked`` names the row columns whose neighbour every row of the chunk has (optional ones,
    host and run, are grouped by the caller so that a MATCH never drops a row).
    """
    node = NODE_BY_LABEL[label]
    links = LINKS.get(label, FAILURE_LINKS)
    matches, edges = [], []
    for i, (rel, target, column) in enumerate(links):
        if column not in linked:
            continue
        key = NODE_BY_LABEL[target].key
        matches.append(f"(x{i}:{target} {{{key}: r.{column}}})")
        edges.append(f"(n)-[:{rel}]->(x{i})")
    props = ", ".join(f"{p}: r.{p}" for p in node.properties if p in present or p == node.key)
    match = f" MATCH {', '.join(matches)}" if matches else ""
    creates = ", ".join([f"(n:{node.label} {{{props}}})", *edges])
    return f"UNWIND $rows AS r{match} CREATE {creates}"


@cache
def create_linked_by_position(label: str, present: frozenset[str], linked: frozenset[str]) -> str:
    """``create_linked`` with each distinct neighbour found once per statement instead of once
    per row (Neo4j, whose lists count from 0): ``$n{i}`` lists the keys of link ``i``'s
    neighbours and row column ``p{i}`` is the position of the row's neighbour in it. Returns
    how many nodes were created, for the caller to check: a neighbour not found would shift
    the positions, so the statement then creates nothing."""
    node = NODE_BY_LABEL[label]
    links = [
        (i, link) for i, link in enumerate(LINKS.get(label, FAILURE_LINKS)) if link[2] in linked
    ]
    finds: list[str] = []
    lists: list[str] = []
    for i, (_rel, target, _column) in links:
        key = NODE_BY_LABEL[target].key
        kept = "".join(f"{name}, " for name in lists)
        finds.append(
            f"UNWIND $n{i} AS k{i} MATCH (m{i}:{target} {{{key}: k{i}}}) "
            f"WITH {kept}collect(m{i}) AS l{i}"
        )
        lists.append(f"l{i}")
    found = " AND ".join(f"size(l{i}) = size($n{i})" for i, _ in links)
    picks = "".join(f", l{i}[r.p{i}] AS x{i}" for i, _ in links)
    props = ", ".join(f"{p}: r.{p}" for p in node.properties if p in present or p == node.key)
    creates = ", ".join(
        [f"(n:{node.label} {{{props}}})", *(f"(n)-[:{rel}]->(x{i})" for i, (rel, _, _) in links)]
    )
    return (
        f"{' '.join(finds)} WHERE {found} UNWIND $rows AS r WITH r{picks} "
        f"CREATE {creates} RETURN count(n) AS created"
    )


# ---- relationships -----------------------------------------------------------------------


def _link(rel_type: str) -> str:
    rel = next(r for r in RELATIONSHIPS if r.type == rel_type)
    src, dst = NODE_BY_LABEL[rel.source], NODE_BY_LABEL[rel.target]
    return (
        f"UNWIND $rows AS r MATCH (a:{src.label} {{{src.key}: r.src}}), "
        f"(b:{dst.label} {{{dst.key}: r.dst}}) CREATE (a)-[:{rel.type}]->(b)"
    )


LINK = {r.type: _link(r.type) for r in RELATIONSHIPS}

# ---- schema info -------------------------------------------------------------------------

READ_SCHEMA_INFO = (
    "MATCH (s:SchemaInfo {name: 'graph'}) RETURN s.version AS version, s.generation AS generation"
)
CREATE_SCHEMA_INFO = (
    "CREATE (s:SchemaInfo {name: 'graph', version: $version, generation: 0, applied_at: $now})"
)
SET_SCHEMA_VERSION = (
    "MATCH (s:SchemaInfo {name: 'graph'}) SET s.version = $version, s.applied_at = $now"
)
# the store's identity and, where a figure was ever revised, when last (``MARK_REVISED``): one read
READ_STORE_IDENTITY = (
    "MATCH (s:SchemaInfo {name: 'graph'}) OPTIONAL MATCH (v:SchemaInfo {name: 'revisions'}) "
    "RETURN s.version AS version, s.applied_at AS applied_at, v.applied_at AS revised"
)
BUMP_GENERATION = (
    "MATCH (s:SchemaInfo {name: 'graph'}) SET s.generation = s.generation + 1 "
    "RETURN s.generation AS generation"
)
# An ingest bumps first (its rows carry the new generation, and the write lock on SchemaInfo
# orders writers, so a generation that readers see has all its stamps committed) and takes the
# bump back when the batch added nothing.
UNBUMP_GENERATION = "MATCH (s:SchemaInfo {name: 'graph'}) SET s.generation = s.generation - 1"
STAMP_CONTEXTS = (
    "UNWIND $keys AS k MATCH (c:Context {context_id: k}) SET c.generation = $generation"
)

# ---- observations ------------------------------------------------------------------------

_OBS_COLUMNS = ", ".join(
    [f"o.{p} AS {p}" for p in OBSERVATION.properties]
    + [f"c.{p} AS {p}" for p in CONTEXT.properties if p not in (CONTEXT.key, "generation")]
)

# Keyset pagination: pages start after a key (``$after``), never with a large SKIP (the embedded
# engine crashes on SKIP beyond a few ten thousand rows, and a deep SKIP costs every row before
# it on both engines). An offset is turned into a key by OBSERVATION_KEYS first.
# The neighbours are matched one clause at a time, after ``o`` and ``c`` are bound: as one
# five-pattern MATCH the embedded engine's planner spends ~90 ms CPU choosing a join order on
# every call, whatever the store holds (EXPLAIN alone: 87 ms; chained: ~4 ms); same rows, and at
# the starter knowledge base's 18k observations every read below is faster (a 1000-row page
# 0.29 -> 0.13 s CPU). The fast test tier's store, API and advisor tests read this way
# (issue 45).
_OBS_NEIGHBOURS = (
    "WITH o, c MATCH (o)-[:OF_BENCHMARK]->(b:Benchmark) WITH o, c, b "
    "MATCH (c)-[:USES_STACK]->(s:Stack) WITH o, c, b, s "
    "MATCH (c)-[:USES_ACCELERATOR]->(a:Accelerator) WITH o, c, b, s, a "
    "MATCH (c)-[:USES_PLACEMENT]->(p:Placement) "
)
_OBS_FILTERS = (
    "WHERE ($after = '' OR o.key > $after) "
    "AND ($stack_id = '' OR c.stack_id = $stack_id) "
    "AND ($accelerator = '' OR c.accelerator = $accelerator) "
    "AND ($placement = '' OR c.placement_kind = $placement) "
    "AND ($benchmark_id = '' OR b.benchmark_id = $benchmark_id) "
    "AND ($metric = '' OR o.metric = $metric) "
    "AND ($source = '' OR c.source = $source) "
    "AND ($host = '' OR c.host = $host) "
    "AND ($run_id = '' OR c.run_id = $run_id) "
    "AND ($framework = '' OR s.framework = $framework) "
    "AND ($framework_version = '' OR s.framework_version = $framework_version) "
    "AND ($cuda = '' OR s.cuda = $cuda) "
    "AND ($driver = '' OR s.driver = $driver) "
    "AND ($benchmark_family = '' OR b.family = $benchmark_family) "
    "AND ($benchmark_name = '' OR b.name = $benchmark_name) "
)
_OBS_MATCH = "MATCH (o:Observation)-[:MEASURED_IN]->(c:Context) " + _OBS_NEIGHBOURS + _OBS_FILTERS
# What batches after a generation wrote (schema v6 stamps, see ``schema.CONTEXT``): from the
# contexts stamped after it (an index seek in Neo4j; a few per batch) to their new observations,
# not a scan of every observation.
_OBS_MATCH_SINCE = (
    "MATCH (c:Context) WHERE c.generation > $since_generation "
    "MATCH (o:Observation)-[:MEASURED_IN]->(c) WHERE o.generation > $since_generation "
    "AND o.generation <= $until_generation " + _OBS_NEIGHBOURS + _OBS_FILTERS
)

OBSERVATION_KEYS = _OBS_MATCH + "RETURN o.key AS key ORDER BY o.key LIMIT $limit"
OBSERVATION_KEYS_SINCE = _OBS_MATCH_SINCE + "RETURN o.key AS key ORDER BY o.key LIMIT $limit"

_OBS_RETURN = (
    f"RETURN {_OBS_COLUMNS}, b.benchmark_id AS benchmark_id, "
    "s.driver AS s_driver, s.cuda AS s_cuda, s.cudnn AS s_cudnn, s.nccl AS s_nccl, "
    "s.tensorrt AS s_tensorrt, s.framework AS s_framework, "
    "s.framework_version AS s_framework_version, s.python AS s_python, "
    "s.extra_json AS s_extra_json, s.image AS s_image, s.raw AS s_raw, "
    "a.vendor AS a_vendor, a.memory_mib AS a_memory_mib, "
    "a.compute_capability AS a_compute_capability, "
    "p.hypervisor AS p_hypervisor, p.vgpu_profile AS p_vgpu_profile, "
    "b.family AS b_family, b.name AS b_name, b.parameters_json AS b_parameters_json "
)

QUERY_OBSERVATIONS = _OBS_MATCH + _OBS_RETURN + "ORDER BY o.key LIMIT $limit"
QUERY_OBSERVATIONS_SINCE = _OBS_MATCH_SINCE + _OBS_RETURN + "ORDER BY o.key LIMIT $limit"
# A page of every observation (no filter: the advisor's table): the page's keys first, in key
# order from the key's index (Neo4j stops after $limit of them), then their neighbours. The
# filtered query joins every observation before it orders and cuts, on every page: at a million
# observations one page outran the read timeout.
QUERY_OBSERVATIONS_PAGE = (
    "MATCH (o:Observation) WHERE o.key > $after WITH o ORDER BY o.key LIMIT $limit "
    "MATCH (o)-[:MEASURED_IN]->(c:Context) " + _OBS_NEIGHBOURS + _OBS_RETURN + "ORDER BY o.key"
)

# The stored values of a chunk of observation keys (``Store.observation_values``): primary-key
# lookups, no neighbours.
OBSERVATION_VALUES = (
    "UNWIND $keys AS k MATCH (o:Observation {key: k}) RETURN o.key AS key, o.value AS value"
)

# A corrected published figure (``Store.revise_observations``): only where the stored figure
# differs, the figure set in place with what the new reading says of its samples, their spread and
# its provenance (a spread it does not give is cleared: it described the old reading).
REVISED = ("value", "samples", "p10", "p90", "stddev", "cv", "provenance_json")


@cache
def revise_observations(present: frozenset[str]) -> str:
    sets = ", ".join(
        f"o.{p} = r.{p}" if p in present else f"o.{p} = NULL"
        for p in REVISED
        if p in present or p != "samples"
    )
    return (
        "UNWIND $rows AS r MATCH (o:Observation {key: r.key}) WHERE o.value <> r.value "
        f"SET {sets} RETURN o.key AS key"
    )


# A revision is not an addition: the mark that the store's data were rewritten (its own SchemaInfo
# node, so a store's identity for what was added to it, ``Store.store_identity``, stays).
MARK_REVISED = (
    "MERGE (s:SchemaInfo {name: 'revisions'}) "
    "SET s.applied_at = $now, s.version = 0, s.generation = 0"
)

# One observation by its key: a primary-key (unique constraint) lookup, then its context's links;
# not the filtered scan above, whose pattern the engines join before filtering.
OBSERVATION_BY_KEY = (
    "MATCH (o:Observation {key: $key}) "
    "MATCH (o)-[:MEASURED_IN]->(c:Context), (o)-[:OF_BENCHMARK]->(b:Benchmark), "
    "(c)-[:USES_STACK]->(s:Stack), (c)-[:USES_ACCELERATOR]->(a:Accelerator), "
    "(c)-[:USES_PLACEMENT]->(p:Placement) " + _OBS_RETURN + "LIMIT 1"
)

# ---- the flat read (Store.flat_observations) ------------------------------------------------
# Table-shaped: observations as scalar columns that name their context and benchmark by key, and
# each context, stack and benchmark once, instead of every observation's neighbours joined onto
# it (the paged read above builds a model per observation from ~45 columns).
FLAT_OBSERVATION_COLUMNS = (
    "key",
    "metric",
    "value",
    "unit",
    "higher_is_better",
    "valid",
    "timestamp",
    "provenance_json",
)
_FLAT_RETURN = (
    "RETURN "
    + ", ".join(f"o.{p} AS {p}" for p in FLAT_OBSERVATION_COLUMNS)
    + ", c.context_id AS context_id, b.benchmark_id AS benchmark_id "
)
# All of them in one statement, in no order (the embedded engine streams it; sorting the rows
# in Python after it costs less time and memory than the engine's ORDER BY: 300k rows, 0.3 s and
# 90 MB less).
FLAT_OBSERVATIONS = (
    "MATCH (o:Observation)-[:MEASURED_IN]->(c:Context), (o)-[:OF_BENCHMARK]->(b:Benchmark) "
    + _FLAT_RETURN
)
# One keyset page (Neo4j): the page's keys in key order from the key's index, then their
# context and benchmark. OPTIONAL, so that every key of the page comes back and the next page
# starts after the last one (an observation without either is left out by the reader).
FLAT_OBSERVATIONS_PAGE = (
    "MATCH (o:Observation) WHERE o.key > $after WITH o ORDER BY o.key LIMIT $limit "
    "OPTIONAL MATCH (o)-[:MEASURED_IN]->(c:Context) OPTIONAL MATCH "
    "(o)-[:OF_BENCHMARK]->(b:Benchmark) " + _FLAT_RETURN + "ORDER BY key"
)
FLAT_CONTEXTS = (
    "MATCH (c:Context)-[:USES_STACK]->(s:Stack), (c)-[:USES_ACCELERATOR]->(a:Accelerator), "
    "(c)-[:USES_PLACEMENT]->(p:Placement) "
    "RETURN c.context_id AS context_id, s.stack_id AS stack_id, c.accelerator AS accelerator, "
    "c.accelerator_count AS accelerator_count, c.placement_kind AS placement_kind, "
    "c.host AS host, c.run_id AS run_id, c.source AS source"
)
HOST_NAMES = "MATCH (h:Host) RETURN h.name AS name"

HOSTS_BY_NAME = "UNWIND $keys AS k MATCH (h:Host {name: k}) RETURN " + ", ".join(
    f"h.{p} AS {p}" for p in NODE_BY_LABEL["Host"].properties
)

OBSERVATIONS_BY_SOURCE = (
    "MATCH (o:Observation)-[:MEASURED_IN]->(c:Context) RETURN c.source AS source, count(o) AS c "
    "ORDER BY source"
)

# ---- node inventory ----------------------------------------------------------------------

DELETE_CLUSTER_NODES = "MATCH (n:ClusterNode) WHERE n.cluster = $cluster DELETE n"
LIST_CLUSTER_NODES = (
    "MATCH (n:ClusterNode) WHERE ($cluster = '' OR n.cluster = $cluster) "
    "RETURN n.node_json AS node_json ORDER BY n.cluster, n.name"
)

# In slices, relationships first: one transaction deleting a large graph (or one hub node with
# all its relationships) outgrows Neo4j's transaction memory limit.
DELETE_SOME_RELATIONSHIPS = "MATCH ()-[r]->() WITH r LIMIT $n DELETE r RETURN count(*) AS c"
DELETE_SOME = "MATCH (n) WITH n LIMIT $n DETACH DELETE n RETURN count(*) AS c"

# Which published names each stored accelerator was imported under (GET /v1/accelerators).
ACCELERATOR_USAGE = (
    "MATCH (o:Observation)-[:MEASURED_IN]->(c:Context) "
    "RETURN c.accelerator AS model, o.provenance_json AS provenance"
)
