"""The REST store: the ``Store`` interface over our own HTTP API.

With it, ``--store http://...`` (or ``--api URL`` / ``ADVISOR_API``, read by the CLI) makes the
CLI and the
collectors clients of a deployed service, unchanged. The API's error JSON is turned back into the
same ``AdvisorError`` subclass the server raised (``Unauthorized`` for 401, ``Forbidden`` for
403); a server that cannot be reached is ``StoreUnavailable``.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import httpx

from stack_advisor.schema.errors import (
    ERRORS_BY_STATUS,
    AdvisorError,
    Forbidden,
    NotFound,
    StoreUnavailable,
    Unauthorized,
    error_from_dict,
)
from stack_advisor.schema.graph import SCHEMA_VERSION
from stack_advisor.schema.models import (
    EntityKind,
    IngestBatch,
    IngestResult,
    ObservationFilter,
    StoredObservation,
    StoreStats,
)
from stack_advisor.store.base import Store
from stack_advisor.store.uris import redact_uri, scrub

SERVER_PAGE = 10_000  # the API's default maximum page size


class RestStore(Store):
    """A store behind ``uri`` (``http://host:port`` or ``https://...``, optionally a path prefix).

    Args:
        uri: the API's base URL.
        token: bearer token (the CLI passes ``ADVISOR_TOKEN``). Reads may work without one,
            writes need the ``write`` scope, applying the schema ``admin``.
        timeout: seconds per request.
        transport: an ``httpx`` transport (e.g. ``httpx.ASGITransport(app)`` in-process).
    """

    def __init__(
        self,
        uri: str,
        token: str | None = None,
        *,
        timeout: float = 30.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        if not uri.startswith(("http://", "https://")):
            raise ValueError(f"RestStore needs an http:// or https:// URI, got {redact_uri(uri)!r}")
        base_url = uri.rstrip("/")
        self.uri = redact_uri(base_url)  # what messages and logs show
        headers = {"Accept": "application/json", "User-Agent": "stack-advisor-rest-store"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        self._client = httpx.Client(
            base_url=base_url, headers=headers, timeout=timeout, transport=transport
        )

    def __repr__(self) -> str:  # never shows the token
        return f"RestStore({self.uri!r})"

    # ---- transport -----------------------------------------------------------------------
    def _request(self, method: str, path: str, **kwargs: Any) -> Any:
        try:
            try:
                response = self._client.request(method, path, **kwargs)
            except (httpx.ReadError, httpx.RemoteProtocolError):
                # A kept-alive connection the server closed meanwhile (it does after a 500):
                # once more on a new one. Every request of the API is idempotent (content keys,
                # whole-inventory replace), so sending one twice changes nothing.
                response = self._client.request(method, path, **kwargs)
        except httpx.TransportError as exc:
            raise StoreUnavailable(
                f"cannot reach the stack-advisor API at {self.uri} ({type(exc).__name__}: "
                f"{scrub(str(exc))}); check that it is running and the URL is right, then retry"
            ) from None
        if response.is_success:
            return response.json()
        raise self._error(response)

    def call(self, method: str, path: str, *, timeout: float | None = None, **kwargs: Any) -> Any:
        """Any other endpoint of the API (the advisor's answers, ``advisor.remote``) with this
        store's token, retry and error mapping; returns the decoded JSON body.

        Args:
            timeout: seconds for this request (default: the store's).
        Raises:
            AdvisorError: the subclass the server raised; StoreUnavailable if it cannot be reached.
        """
        if timeout is not None:
            kwargs["timeout"] = timeout
        return self._request(method, path, **kwargs)

    def _error(self, response: httpx.Response) -> AdvisorError:
        status = response.status_code
        try:
            body = response.json()
        except ValueError:
            body = None
        if isinstance(body, dict) and "error" in body:
            exc = error_from_dict(status, body)
        else:
            text = response.text.strip().replace("\n", " ")[:200]
            message = (
                f"HTTP {status} from {redact_uri(str(response.request.url))}: "
                f"{text or response.reason_phrase}"
            )
            cls = StoreUnavailable if status >= 500 else ERRORS_BY_STATUS.get(status, AdvisorError)
            exc = cls(message)
        if isinstance(exc, (Unauthorized, Forbidden)):
            exc.www_authenticate = response.headers.get("WWW-Authenticate")
        if isinstance(exc, Unauthorized):
            exc.message = f"{exc.message} (set ADVISOR_TOKEN or pass --token)"
            exc.args = (exc.message,)
        elif status == 503 and type(exc) is AdvisorError:
            exc = StoreUnavailable(exc.message, details=exc.details)
        exc.http_status = status
        return exc

    # ---- Store core ----------------------------------------------------------------------
    def _schema_version(self) -> int | None:
        body = self._request("GET", "/v1/schema")
        return body["schema_version"]  # type: ignore[no-any-return]

    def _ensure_schema(self) -> int:
        # Reading first means a read-only token can "ensure" an up-to-date store; applying a
        # schema needs an admin token.
        version = self._schema_version()
        if version == SCHEMA_VERSION:
            return version
        body = self._request("POST", "/v1/schema")
        return body["schema_version"]  # type: ignore[no-any-return]

    def _ingest(self, batch: IngestBatch) -> IngestResult:
        body = self._request("POST", "/v1/batches", json=batch.model_dump(mode="json"))
        return IngestResult.model_validate({k: body[k] for k in IngestResult.model_fields})

    def _query_observations(
        self, flt: ObservationFilter, limit: int, offset: int, after: str | None
    ) -> list[StoredObservation]:
        params: dict[str, Any] = flt.model_dump(mode="json", exclude_none=True)
        out: list[StoredObservation] = []
        while len(out) < limit:
            page = min(SERVER_PAGE, limit - len(out))
            query = {**params, "limit": page}
            if offset:
                query["offset"] = offset
            if after:
                query["after"] = after
            body = self._request("GET", "/v1/observations", params=query)
            items = body["items"]
            out.extend(StoredObservation.model_validate(item) for item in items)
            if len(items) < page:
                break
            offset, after = 0, out[-1].key  # the next page starts after this one's last key
        return out

    def _list_entities(self, kind: EntityKind) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        while True:
            body = self._request(
                "GET", f"/v1/{kind.value}", params={"limit": SERVER_PAGE, "offset": len(out)}
            )
            out.extend(body["items"])
            if not body["items"] or len(out) >= body["total"]:
                return out

    def _stats(self) -> StoreStats:
        return StoreStats.model_validate(self._request("GET", "/v1/stats"))

    def _sync_inventory(self, cluster: str, nodes: list[dict[str, Any]]) -> int:
        path = f"/v1/inventory/{quote(cluster, safe='')}"
        body = self._request("PUT", path, json={"nodes": nodes})
        return int(body["nodes"])

    def _list_inventory(self, cluster: str | None) -> list[dict[str, Any]]:
        params = {"cluster": cluster} if cluster is not None else {}
        return list(self._request("GET", "/v1/inventory", params=params)["items"])

    def _revise_observations(self, batch: IngestBatch) -> int:
        body = self._request(
            "POST", "/v1/observations/revisions", json=batch.model_dump(mode="json")
        )
        return int(body["revised"])

    def _get_observation(self, key: str) -> StoredObservation | None:
        """One request instead of the base class's scan (the API's 404: None, as the contract
        has it)."""
        try:
            body = self._request("GET", f"/v1/observations/{quote(key, safe='')}")
        except NotFound:
            return None
        return StoredObservation.model_validate(body)

    def _clear(self) -> None:
        raise NotImplementedError(
            f"{type(self).__name__} cannot delete the knowledge base behind {self.uri}: the API "
            "offers no such operation; reset the store on the server"
        )

    def close(self) -> None:
        self._client.close()
