"""The kinds of Kubernetes object a recommendation's snippet can be written as (``--target``)."""

from __future__ import annotations

from enum import StrEnum


class SnippetTarget(StrEnum):
    """What the snippet is: a Pod (one node), a Deployment (one node, kept running), a DRA
    ResourceClaimTemplate with its consumer, a Kueue-admitted Job/JobSet/LeaderWorkerSet with
    topology annotations, a LeaderWorkerSet (multi-node serving), a Kubeflow TrainJob or a JobSet
    (training, gang-admitted), a KubeVirt VirtualMachineInstance (VM placements)."""

    POD = "pod"
    DEPLOYMENT = "deployment"
    DRA = "dra"
    KUEUE = "kueue"
    LWS = "lws"
    TRAINJOB = "trainjob"
    JOBSET = "jobset"
    KUBEVIRT = "kubevirt"
