"""deploy/monitoring and deploy/k8s/components/monitoring: the alert rules pass Prometheus'
own checker and their unit tests, the Grafana dashboard matches its schema and its queries
parse, every metric they use is one the workers export, and the ServiceMonitor scrapes
the workers' metrics port.

promtool comes from Debian's prometheus package (scripts/install-test-tools.sh, which
`make test` runs); without it the promtool checks skip, saying how to get it, unless
GRAPHRUNTIME_REQUIRE_TEST_TOOLS=1 (CI), where they fail.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

from workers.observability import GAUGES, METRICS
from workers.observability._process import BUILD_INFO

ROOT = Path(__file__).resolve().parents[2]
MONITORING = ROOT / "deploy" / "monitoring"
COMPONENT = ROOT / "deploy" / "k8s" / "components" / "monitoring"
ALERTS = MONITORING / "alerts.yaml"
DASHBOARD = MONITORING / "grafana-dashboard.json"
DASHBOARD_SCHEMA = MONITORING / "grafana-dashboard.schema.json"

# Histograms are exported as <name>_bucket, _sum and _count; process_* per worker process.
PROCESS_METRICS = {
    "process_cpu_seconds_total",
    "process_resident_memory_bytes",
    "process_virtual_memory_bytes",
    "process_open_fds",
    "process_max_fds",
    "process_start_time_seconds",
}
HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")
PROMQL_WORDS = {
    "sum", "max", "min", "avg", "count", "by", "without", "rate", "increase", "delta",
    "deriv", "histogram_quantile", "absent", "and", "or", "unless", "on", "ignoring", "le",
    "up",
}  # fmt: skip


def promtool() -> str:
    found = shutil.which(
        "promtool", path=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    )
    if found is None:
        message = (
            "promtool not found: run scripts/install-test-tools.sh (make test does), or put "
            "Prometheus' promtool on PATH"
        )
        if os.environ.get("GRAPHRUNTIME_REQUIRE_TEST_TOOLS") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return found


def run_promtool(*args: str, cwd: Path = MONITORING) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [promtool(), *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )


def exported() -> set[str]:
    names = {name for name in METRICS if not name.endswith("_seconds")}
    names |= {n + s for n in METRICS if n.endswith("_seconds") for s in HISTOGRAM_SUFFIXES}
    return names | set(GAUGES) | PROCESS_METRICS | {BUILD_INFO}


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression reads (not its functions, labels or keywords)."""
    without_labels = re.sub(r"\{[^}]*\}", "", expr)
    without_strings = re.sub(r'"[^"]*"', "", without_labels)
    without_ranges = re.sub(r"\[[^\]]*\]", "", without_strings)
    without_groupings = re.sub(r"\b(by|without|on|ignoring)\s*\([^)]*\)", "", without_ranges)
    words = set(re.findall(r"\b[a-zA-Z_:][a-zA-Z0-9_:]*\b", without_groupings))
    return {w for w in words if w not in PROMQL_WORDS and not w.startswith("__")}


def alert_rules() -> list[dict[str, Any]]:
    return [
        rule for group in yaml.safe_load(ALERTS.read_text())["groups"] for rule in group["rules"]
    ]


def dashboard() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(DASHBOARD.read_text("utf-8"))
    return data


def dashboard_queries() -> list[str]:
    return [t["expr"] for p in dashboard()["panels"] for t in p.get("targets", [])]


# --- alert rules -------------------------------------------------------------------------


def test_promtool_checks_the_alert_rules() -> None:
    done = run_promtool("check", "rules", str(ALERTS))
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"SUCCESS: {len(alert_rules())} rules found" in done.stdout


def test_each_alert_fires_in_its_scenario_and_not_on_a_healthy_cluster() -> None:
    done = run_promtool("test", "rules", "alerts.test.yaml")
    assert done.returncode == 0, done.stdout + done.stderr
    tested = set(re.findall(r"alertname: (\w+)", (MONITORING / "alerts.test.yaml").read_text()))
    assert tested == {rule["alert"] for rule in alert_rules()}


def test_promtool_refuses_a_broken_rule(tmp_path: Path) -> None:
    """The checks above can fail."""
    broken = tmp_path / "broken.yaml"
    broken.write_text(
        "groups:\n  - name: x\n    rules:\n      - alert: X\n        expr: sum(rate(x[5m])\n"
    )
    assert run_promtool("check", "rules", str(broken)).returncode != 0


def test_the_alerts_cover_what_operators_must_hear_about() -> None:
    names = {rule["alert"] for rule in alert_rules()}
    assert {
        "GraphruntimeNoWorker",
        "GraphruntimeQueueGrowing",
        "GraphruntimeOverdueInterrupts",
        "GraphruntimeDeadLetters",
        "GraphruntimeNodeFailureRate",
    } <= names
    for rule in alert_rules():
        assert rule["labels"]["severity"] in {"warning", "critical"}, rule["alert"]
        assert rule["annotations"]["summary"], rule["alert"]
        assert rule["annotations"]["description"], rule["alert"]


def test_alerts_and_dashboard_read_only_metrics_the_workers_export() -> None:
    known = exported()
    for expr in [rule["expr"] for rule in alert_rules()] + dashboard_queries():
        unknown = metric_names(expr) - known
        assert not unknown, f"{expr}: {unknown} is not exported by the workers"


def test_the_metric_name_reader_sees_an_unknown_metric() -> None:
    assert metric_names('sum by (queue) (rate(graphruntime_nope_total{a="b"}[5m]))') == {
        "graphruntime_nope_total"
    }


# --- the dashboard -----------------------------------------------------------------------


def test_the_dashboard_matches_its_schema() -> None:
    schema = json.loads(DASHBOARD_SCHEMA.read_text("utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.Draft202012Validator(schema).validate(dashboard())


def test_the_dashboard_schema_refuses_a_misspelt_key() -> None:
    schema = json.loads(DASHBOARD_SCHEMA.read_text("utf-8"))
    broken = dashboard()
    broken["panels"][1]["gridpos"] = broken["panels"][1].pop("gridPos")
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, schema)


def test_the_dashboard_layout_has_unique_ids_and_no_overlap() -> None:
    panels = dashboard()["panels"]
    ids = [p["id"] for p in panels]
    assert len(ids) == len(set(ids))
    taken: set[tuple[int, int]] = set()
    for p in panels:
        g = p["gridPos"]
        assert g["x"] + g["w"] <= 24, p["title"]
        cells = {
            (x, y) for x in range(g["x"], g["x"] + g["w"]) for y in range(g["y"], g["y"] + g["h"])
        }
        assert not cells & taken, f"{p['title']} overlaps another panel"
        taken |= cells
    uses = {t["datasource"]["uid"] for p in panels for t in p.get("targets", [])}
    assert uses == {"${datasource}"}
    assert [v["name"] for v in dashboard()["templating"]["list"]] == ["datasource"]


def test_every_dashboard_query_parses(tmp_path: Path) -> None:
    """Each panel's query, as a recording rule: promtool parses it as Prometheus would
    ($__rate_interval, Grafana's, is given a value first)."""
    rules = {
        "groups": [
            {
                "name": "dashboard",
                "rules": [
                    {
                        "record": f"dashboard:query_{i}",
                        "expr": expr.replace("$__rate_interval", "5m"),
                    }
                    for i, expr in enumerate(dashboard_queries())
                ],
            }
        ]
    }
    path = tmp_path / "dashboard-queries.yaml"
    path.write_text(yaml.safe_dump(rules))
    done = run_promtool("check", "rules", str(path))
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_dashboard_shows_each_worker_process_and_the_cluster() -> None:
    queries = " ".join(dashboard_queries())
    for name in ("process_cpu_seconds_total", "process_resident_memory_bytes", BUILD_INFO):
        assert name in queries
    for name in GAUGES:
        if name != "graphruntime_cluster_up":
            assert name in queries, f"{name} is on no panel"
    assert "graphruntime_cluster_up" in queries


# --- Kubernetes: ServiceMonitor, Service, PrometheusRule ----------------------------------


def component(kind: str) -> dict[str, Any]:
    for path in sorted(COMPONENT.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text("utf-8")):
            if doc and doc.get("kind") == kind:
                return dict(doc)
    raise AssertionError(f"no {kind} in {COMPONENT}")


def test_the_prometheus_rule_holds_the_alert_rules_word_for_word() -> None:
    assert (
        component("PrometheusRule")["spec"]["groups"]
        == yaml.safe_load(ALERTS.read_text())["groups"]
    )


def test_the_service_monitor_scrapes_the_workers_metrics_port() -> None:
    monitor, service = component("ServiceMonitor"), component("Service")
    kubernetes_validate.validate(service, "1.29.0", strict=True)
    assert (
        monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    )
    (endpoint,) = monitor["spec"]["endpoints"]
    (port,) = service["spec"]["ports"]
    assert endpoint["port"] == port["name"] == port["targetPort"] == "metrics"
    assert endpoint["path"] == "/metrics"
    assert service["spec"]["clusterIP"] == "None"
    base = ROOT / "deploy" / "k8s" / "base"
    for name in ("deployment-coordinator.yaml", "deployment-tasks.yaml"):
        (deployment,) = yaml.safe_load_all((base / name).read_text("utf-8"))
        template = deployment["spec"]["template"]
        assert service["spec"]["selector"].items() <= template["metadata"]["labels"].items()
        (container,) = template["spec"]["containers"]
        declared = {p["name"]: p["containerPort"] for p in container["ports"]}
        assert declared["metrics"] == port["port"]
    # the job name alerts.yaml's GraphruntimeScrapeFailing expects (the Service's name)
    assert service["metadata"]["name"].startswith("graphruntime")


def test_the_service_monitor_schema_refuses_a_misspelt_field() -> None:
    schema = json.loads(
        (ROOT / "deploy" / "k8s" / "schemas" / "servicemonitor.schema.json").read_text("utf-8")
    )
    good = component("ServiceMonitor")
    jsonschema.validate(good, schema)
    typo = json.loads(json.dumps(good))
    typo["spec"]["endpoints"][0]["intervall"] = "30s"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(typo, schema)
