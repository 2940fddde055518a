"""Server-side dry-run of snippet objects on the kube tier's real apiserver, with the published
CRDs of the snippet targets installed (tests/kube: test_snippet_targets, test_snippet_sample;
the module fixture ``served`` of tests/kube/conftest.py wraps ``serve_target_crds``)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.crds import SCHEMALESS, crds_for_targets


def serve_target_crds(api_client: Any) -> Iterator[tuple[Any, str]]:
    """(dynamic client, namespace) once the CRDs are Established; CRDs this module created and
    its namespace are removed afterwards, so other modules see the apiserver as before."""
    from kubernetes import client, dynamic
    from kubernetes.client.rest import ApiException

    try:
        crds, _ = crds_for_targets()
    except RuntimeError as exc:
        pytest.skip(f"published CRDs not reachable: {exc}")
    ext = client.ApiextensionsV1Api(api_client)
    created = []
    for crd in crds:
        try:
            ext.create_custom_resource_definition(crd)
            created.append(crd["metadata"]["name"])
        except ApiException as exc:
            if exc.status != 409:
                raise
    deadline = time.monotonic() + 30
    for name in created:
        while not any(
            c.type == "Established" and c.status == "True"
            for c in (ext.read_custom_resource_definition(name).status.conditions or [])
        ):
            assert time.monotonic() < deadline, f"CRD {name} not Established"
            time.sleep(0.2)
    core = client.CoreV1Api(api_client)
    namespace = f"targets-{uuid.uuid4().hex[:6]}"
    core.create_namespace(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
    )
    try:  # where a kube-controller-manager runs, it has made the namespace's default already
        core.create_namespaced_service_account(
            namespace,
            {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}},
        )
    except ApiException as exc:
        if exc.status != 409:
            raise
    try:
        yield dynamic.DynamicClient(api_client), namespace
    finally:
        core.delete_namespace(namespace)
        for name in created:
            ext.delete_custom_resource_definition(name)


def dry_run(dyn: Any, namespace: str, obj: dict[str, Any]) -> None:
    resource = dyn.resources.get(api_version=obj["apiVersion"], kind=obj["kind"])
    resource.create(
        body=obj,
        namespace=namespace,
        dry_run="All",
        query_params=[("fieldValidation", "Strict")],
    )
    if obj["kind"] in SCHEMALESS:  # no schema: its pods are checked as Pods
        _pods_of(dyn, namespace, obj)


def _pods_of(dyn: Any, namespace: str, obj: dict[str, Any]) -> None:
    pods = dyn.resources.get(api_version="v1", kind="Pod")
    if obj["kind"] == "VirtualMachineInstance":
        return  # a VM is not a pod spec; its node selector and tolerations are Pod fields
    for i, replica in enumerate((obj["spec"].get("pytorchReplicaSpecs") or {}).values()):
        template = replica["template"]
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"{obj['metadata']['name']}-{i}"},
            "spec": template["spec"],
        }
        pods.create(body=pod, namespace=namespace, dry_run="All")
