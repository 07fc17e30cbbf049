"""deploy/k8s: schema-valid, consistent with the settings, hardened, renderable offline.

- Every resource file (base, components) validates against the Kubernetes API schemas that
  kubernetes-validate ships (strict: unknown fields fail), for the oldest and newest versions
  we support; ScaledObjects against the vendored KEDA schema (deploy/k8s/schemas).
- Every kustomization's files exist, and every patch targets a resource of its build.
- With a kustomize (`kubectl kustomize` or `kustomize`; no network needed), each overlay is
  rendered and the result is validated and checked as a whole: references resolve, queues
  match the settings, pods are hardened, each Deployment has a PDB and one autoscaler.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

from workers.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "deploy" / "k8s"
OVERLAYS = sorted(p.parent for p in (K8S / "overlays").glob("*/kustomization.yaml"))
KUSTOMIZATION_KINDS = {"Kustomization", "Component"}
# The oldest Kubernetes these manifests target (PDB policy/v1, HPA autoscaling/v2, Job
# ttlSecondsAfterFinished and sizeLimit are all GA by then) and the newest schema shipped.
KUBERNETES_VERSIONS = ["1.29", kubernetes_validate.utils.latest_version()]
KEDA_SCHEMA = json.loads((K8S / "schemas" / "keda-scaledobject.schema.json").read_text("utf-8"))
# prometheus-operator's, generated like KEDA's (deploy/k8s/schemas/regenerate_monitoring.py)
MONITORING_SCHEMAS = {
    kind: json.loads((K8S / "schemas" / f"{kind.lower()}.schema.json").read_text("utf-8"))
    for kind in ("ServiceMonitor", "PrometheusRule")
}
# KEDA's redis (lists) scaler parameters (keda.sh/docs/2.16/scalers/redis-lists/).
REDIS_SCALER_KEYS = {
    "address", "addressFromEnv", "host", "hostFromEnv", "port", "portFromEnv",
    "usernameFromEnv", "passwordFromEnv", "listName", "listLength", "activationListLength",
    "enableTLS", "unsafeSsl", "databaseIndex",
}  # fmt: skip
NAMESPACED_EXEMPT = {"Namespace"}


def load_documents(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text("utf-8")) if doc]


def kustomizations() -> list[Path]:
    return sorted(K8S.rglob("kustomization.yaml"))


def resource_files() -> list[Path]:
    """YAML files that hold Kubernetes resources (not kustomize's own files)."""
    files = []
    for path in sorted(K8S.rglob("*.yaml")):
        docs = load_documents(path)
        if docs and all(
            "apiVersion" in d and d.get("kind") not in KUSTOMIZATION_KINDS for d in docs
        ):
            files.append(path)
    return files


def validate(doc: dict[str, Any]) -> None:
    """Raise if ``doc`` does not match its schema."""
    if doc["apiVersion"].startswith("keda.sh/"):
        assert doc["apiVersion"] == "keda.sh/v1alpha1", doc
        assert doc["kind"] == "ScaledObject", doc
        jsonschema.validate(doc, KEDA_SCHEMA)
        return
    if doc["apiVersion"].startswith("monitoring.coreos.com/"):
        assert doc["apiVersion"] == "monitoring.coreos.com/v1", doc
        jsonschema.validate(doc, MONITORING_SCHEMAS[doc["kind"]])
        return
    for version in KUBERNETES_VERSIONS:
        kubernetes_validate.validate(doc, version, strict=True)


# --- the validators can fail ---------------------------------------------------------------


def test_kubernetes_schema_rejects_an_unknown_field() -> None:
    doc = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "x"},
        "spec": {"maxUnavailable": 1, "selectr": {}},
    }
    with pytest.raises(kubernetes_validate.ValidationError):
        validate(doc)


def test_keda_schema_rejects_an_unknown_field_and_a_missing_target() -> None:
    good = load_documents(K8S / "components" / "keda" / "scaledobjects.yaml")[0]
    validate(good)
    typo = json.loads(json.dumps(good))
    typo["spec"]["minReplicas"] = 1
    with pytest.raises(jsonschema.ValidationError):
        validate(typo)
    missing = json.loads(json.dumps(good))
    del missing["spec"]["scaleTargetRef"]
    with pytest.raises(jsonschema.ValidationError):
        validate(missing)


# --- files, one by one -----------------------------------------------------------------------


def test_the_files_are_found() -> None:
    kinds = {d["kind"] for path in resource_files() for d in load_documents(path)}
    assert {"Namespace", "Deployment", "Job", "PodDisruptionBudget", "ScaledObject"} <= kinds
    assert {"HorizontalPodAutoscaler", "ServiceAccount"} <= kinds
    assert {"Service", "ServiceMonitor", "PrometheusRule"} <= kinds
    assert len(OVERLAYS) >= 2


@pytest.mark.parametrize("path", resource_files(), ids=lambda p: str(p.relative_to(K8S)))
def test_resource_file_is_schema_valid(path: Path) -> None:
    for doc in load_documents(path):
        validate(doc)


def _kustomization_inputs(path: Path) -> Iterator[Path]:
    data = yaml.safe_load(path.read_text("utf-8"))
    for key in ("resources", "components", "configurations"):
        for entry in data.get(key, []):
            yield path.parent / entry
    for patch in data.get("patches", []):
        if "path" in patch:
            yield path.parent / patch["path"]
    for generator in data.get("configMapGenerator", []) + data.get("secretGenerator", []):
        for entry in generator.get("envs", []) + generator.get("files", []):
            yield path.parent / entry.split("=")[-1]


@pytest.mark.parametrize("path", kustomizations(), ids=lambda p: str(p.relative_to(K8S)))
def test_kustomization_inputs_exist(path: Path) -> None:
    for entry in _kustomization_inputs(path):
        target = entry / "kustomization.yaml" if entry.is_dir() else entry
        assert target.is_file(), f"{path.relative_to(K8S)} refers to a missing {entry}"


def collected(path: Path) -> list[dict[str, Any]]:
    """The resources a kustomization gathers from files (generators and patches aside)."""
    docs: list[dict[str, Any]] = []
    data = yaml.safe_load(path.read_text("utf-8"))
    for entry in data.get("resources", []) + data.get("components", []):
        target = path.parent / entry
        if target.is_dir():
            docs.extend(collected(target / "kustomization.yaml"))
        else:
            docs.extend(load_documents(target))
    return docs


@pytest.mark.parametrize("overlay", OVERLAYS, ids=lambda p: p.name)
def test_overlay_patches_target_existing_resources(overlay: Path) -> None:
    data = yaml.safe_load((overlay / "kustomization.yaml").read_text("utf-8"))
    docs = collected(overlay / "kustomization.yaml")
    for patch in data.get("patches", []):
        target = patch["target"]
        matches = [
            d
            for d in docs
            if d["kind"] == target["kind"] and d["metadata"]["name"] == target["name"]
        ]
        assert matches, f"{overlay.name}: patch target {target} is not in the build"
        # JSON 6902 paths must exist in the target (a `replace` of a missing path fails).
        for op in yaml.safe_load(patch["patch"]):
            node: Any = matches[0]
            for part in op["path"].strip("/").split("/"):
                node = node[int(part)] if isinstance(node, list) else node[part]


# --- rendered overlays --------------------------------------------------------------------


def kustomize_command() -> list[str] | None:
    if shutil.which("kustomize"):
        return ["kustomize", "build"]
    if shutil.which("kubectl"):
        return ["kubectl", "kustomize"]
    return None


@pytest.fixture(scope="module", params=OVERLAYS, ids=lambda p: p.name)
def rendered(request: pytest.FixtureRequest) -> list[dict[str, Any]]:
    command = kustomize_command()
    if command is None:
        pytest.skip("no kustomize or kubectl here; the file-by-file checks above still ran")
    done = subprocess.run(
        [*command, str(request.param)], capture_output=True, text=True, check=False, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc]


def by_kind(docs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [d for d in docs if d["kind"] == kind]


def pod_templates(docs: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    return [
        (d["metadata"]["name"], d["spec"]["template"]["spec"])
        for d in docs
        if d["kind"] in {"Deployment", "Job"}
    ]


def test_rendered_is_schema_valid_and_namespaced(rendered: list[dict[str, Any]]) -> None:
    namespaces = {d["metadata"]["name"] for d in by_kind(rendered, "Namespace")}
    assert namespaces == {"graphruntime"}
    for doc in rendered:
        validate(doc)
        if doc["kind"] not in NAMESPACED_EXEMPT:
            assert doc["metadata"].get("namespace") in namespaces, doc["metadata"]["name"]


def test_rendered_references_resolve(rendered: list[dict[str, Any]]) -> None:
    names = {(d["kind"], d["metadata"]["name"]) for d in rendered}
    for owner, spec in pod_templates(rendered):
        assert ("ServiceAccount", spec["serviceAccountName"]) in names, owner
        for container in spec["containers"]:
            for source in container.get("envFrom", []):
                if "configMapRef" in source:
                    assert ("ConfigMap", source["configMapRef"]["name"]) in names, owner
                if "secretRef" in source:
                    assert ("Secret", source["secretRef"]["name"]) in names, owner
    for scaler in by_kind(rendered, "ScaledObject") + by_kind(rendered, "HorizontalPodAutoscaler"):
        target = scaler["spec"]["scaleTargetRef"]["name"]
        assert ("Deployment", target) in names, scaler["metadata"]["name"]


def _env_of(container: dict[str, Any], rendered: list[dict[str, Any]]) -> dict[str, str]:
    """The variables a container gets from its ConfigMaps and Secrets (Secret values unread)."""
    env: dict[str, str] = {}
    for source in container.get("envFrom", []):
        for kind, key in (("ConfigMap", "configMapRef"), ("Secret", "secretRef")):
            if key in source:
                (doc,) = [
                    d
                    for d in by_kind(rendered, kind)
                    if d["metadata"]["name"] == source[key]["name"]
                ]
                env.update({name: str(v) for name, v in (doc.get("data") or {}).items()})
    return env


def test_workers_consume_the_settings_queues_and_keda_watches_them(
    rendered: list[dict[str, Any]],
) -> None:
    fields = Settings.model_fields
    expected = {
        "GRAPHRUNTIME_COORDINATOR_QUEUE": fields["coordinator_queue"].default,
        "GRAPHRUNTIME_TASK_QUEUE": fields["task_queue"].default,
    }
    queue_of: dict[str, str] = {}
    for deployment in by_kind(rendered, "Deployment"):
        (container,) = deployment["spec"]["template"]["spec"]["containers"]
        command = container["command"]
        assert command[:2] == ["graphrun", "worker"]
        variable = re.fullmatch(r"\$\((\w+)\)", command[command.index("--queues") + 1])
        assert variable is not None, "--queues should come from the ConfigMap"
        env = _env_of(container, rendered)
        assert env[variable.group(1)] == expected[variable.group(1)]
        queue_of[deployment["metadata"]["name"]] = env[variable.group(1)]
    assert sorted(queue_of.values()) == sorted(expected.values())
    for scaled in by_kind(rendered, "ScaledObject"):
        target = scaled["spec"]["scaleTargetRef"]["name"]
        (deployment,) = [
            d for d in by_kind(rendered, "Deployment") if d["metadata"]["name"] == target
        ]
        env = _env_of(deployment["spec"]["template"]["spec"]["containers"][0], rendered)
        assert scaled["spec"]["minReplicaCount"] >= 1, "workers run the sweeper: keep one"
        for trigger in scaled["spec"]["triggers"]:
            assert trigger["type"] == "redis"
            metadata = trigger["metadata"]
            assert set(metadata) <= REDIS_SCALER_KEYS, set(metadata) - REDIS_SCALER_KEYS
            assert metadata["listName"] == queue_of[target]
            assert int(metadata["listLength"]) >= 1
            for key, value in metadata.items():
                if key.endswith("FromEnv"):
                    assert value in env, f"{target} has no {value} for KEDA's {key}"


def test_pods_are_hardened(rendered: list[dict[str, Any]]) -> None:
    for owner, spec in pod_templates(rendered):
        pod = spec["securityContext"]
        assert pod["runAsNonRoot"] is True, owner
        assert pod["seccompProfile"]["type"] == "RuntimeDefault", owner
        assert spec["automountServiceAccountToken"] is False, owner
        for container in spec["containers"]:
            ctx = container["securityContext"]
            assert ctx["allowPrivilegeEscalation"] is False, owner
            assert ctx["readOnlyRootFilesystem"] is True, owner
            assert ctx["capabilities"]["drop"] == ["ALL"], owner
            resources = container["resources"]
            assert {"cpu", "memory"} <= set(resources["requests"]), owner
            assert "memory" in resources["limits"], owner
            mounts = {m["mountPath"] for m in container.get("volumeMounts", [])}
            assert "/tmp" in mounts, f"{owner}: read-only root needs a writable /tmp"


def test_workers_have_probes_a_pdb_and_one_autoscaler(rendered: list[dict[str, Any]]) -> None:
    pdbs = by_kind(rendered, "PodDisruptionBudget")
    scaled = {d["spec"]["scaleTargetRef"]["name"] for d in by_kind(rendered, "ScaledObject")}
    hpas = {
        d["spec"]["scaleTargetRef"]["name"] for d in by_kind(rendered, "HorizontalPodAutoscaler")
    }
    assert not (scaled and hpas), "KEDA makes its own HPAs: use one or the other"
    for deployment in by_kind(rendered, "Deployment"):
        name = deployment["metadata"]["name"]
        template = deployment["spec"]["template"]
        assert "replicas" not in deployment["spec"], f"{name}: the autoscaler owns replicas"
        (container,) = template["spec"]["containers"]
        for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
            assert "inspect ping" in " ".join(container[probe]["exec"]["command"]), name
        labels = template["metadata"]["labels"]
        covering = [
            p for p in pdbs if p["spec"]["selector"]["matchLabels"].items() <= labels.items()
        ]
        assert len(covering) == 1, f"{name}: {len(covering)} PodDisruptionBudgets"
        assert (name in scaled) != (name in hpas), f"{name}: needs exactly one autoscaler"


def test_workers_serve_metrics_where_prometheus_is_told_to_scrape(
    rendered: list[dict[str, Any]],
) -> None:
    for deployment in by_kind(rendered, "Deployment"):
        name = deployment["metadata"]["name"]
        template = deployment["spec"]["template"]
        (container,) = template["spec"]["containers"]
        port = _env_of(container, rendered)["GRAPHRUNTIME_METRICS_PORT"]
        (declared,) = [p for p in container["ports"] if p["name"] == "metrics"]
        assert str(declared["containerPort"]) == port, name
        annotations = template["metadata"]["annotations"]
        assert annotations["prometheus.io/scrape"] == "true", name
        assert annotations["prometheus.io/port"] == port, name
        assert annotations["prometheus.io/path"] == "/metrics", name
