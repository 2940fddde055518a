"""The store's schema version and statistics; applying the schema is an admin operation."""

from __future__ import annotations

from fastapi import APIRouter

from stack_advisor.api.deps import AdminCaller, ReadCaller, ResourcesDep, StoreDep
from stack_advisor.api.routes import READ_ERRORS, error_responses
from stack_advisor.api.schemas import SchemaInfo
from stack_advisor.schema.graph import SCHEMA_VERSION
from stack_advisor.schema.models import StoreStats

router = APIRouter(prefix="/v1", tags=["store"])


@router.get(
    "/schema",
    operation_id="getSchemaVersion",
    response_model=SchemaInfo,
    responses=READ_ERRORS,
    summary="The schema version recorded in the store",
)
def get_schema_version(store: StoreDep, _: ReadCaller) -> SchemaInfo:
    return SchemaInfo(schema_version=store.schema_version(), code_schema_version=SCHEMA_VERSION)


@router.post(
    "/schema",
    operation_id="ensureSchema",
    response_model=SchemaInfo,
    responses=error_responses(401, 403, 503),
    summary="Apply constraints, indexes and pending migrations (idempotent; admin)",
)
def ensure_schema(store: StoreDep, resources: ResourcesDep, _: AdminCaller) -> SchemaInfo:
    version = store.ensure_schema()
    resources.written()
    return SchemaInfo(schema_version=version, code_schema_version=SCHEMA_VERSION)


@router.get(
    "/stats",
    operation_id="getStats",
    response_model=StoreStats,
    responses=READ_ERRORS,
    summary="Node counts, observations per source, data generation",
)
def get_stats(store: StoreDep, _: ReadCaller) -> StoreStats:
    return store.stats()
