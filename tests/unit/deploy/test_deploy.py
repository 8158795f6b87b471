"""docker-compose.yml, deploy/Dockerfile, the topic table and deploy/k8s are checked here.

No Docker engine or Kubernetes runs in CI, so these tests check what can be checked without
one: every file parses, every service it names is a vcbus service run by a real CLI command,
the topic table lists exactly the topics the services use and keeps what they rebuild from,
the topic steps create it with ``vcbus topics``, the scheduler configuration is valid and
the same everywhere, and the probes reach the health server.
"""

from __future__ import annotations

import argparse
import re
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from vcbus.core.runtime.clock import SystemClock
from vcbus.core.runtime.service import Service
from vcbus.core.runtime.settings import Settings
from vcbus.core.runtime.topic_table import SHIPPED_TABLE
from vcbus.core.runtime.topology import service_topics, topic_configs
from vcbus.core.scheduling.scheduler import parse_conf
from vcbus.services.bootstrap import SERVICE_NAMES, bootstrap
from vcbus.services.cli import agent as agent_command
from vcbus.services.cli import build_parser
from vcbus.services.cli import serve as serve_command
from vcbus.services.cli import topics as topics_command
from vcbus.services.cli.serve import add_service_options, system_conf

ROOT = Path(__file__).resolve().parents[3]
DEPLOY = ROOT / "deploy"
K8S = DEPLOY / "k8s"
PREFIX = "vcbus."
SCALABLE = {"admission", "job-controller", "cluster"}
SINGLETONS = {"podgroup-enqueue", "allocator"}
SCHEDULER_CONF_OPTION = {"allocator": "--scheduler-conf", "podgroup-enqueue": "--enqueue-conf"}
COMPACTED = {
    "jobs.status",
    "podgroups",
    "podgroups.status",
    "podgroups.conditions",
    "nodes",
    "queues",
}
"""Tables: the newest record of a key is the whole object."""
KEPT_FOREVER = {
    "jobs.admitted",
    "pods",
    "pods.status",
    "bindings",
    "reservations",
    "capacity.reservations",
}
"""Views are rebuilt from them, but one key holds many objects: nothing is deleted."""
WEEK = "604800000"


def services(settings: Settings) -> list[Service]:
    """Every service, built with its default options."""
    parser = argparse.ArgumentParser()
    add_service_options(parser)
    args = parser.parse_args([])
    return bootstrap(system_conf(args, SERVICE_NAMES), settings, SystemClock())


def shipped_settings() -> Settings:
    """The settings of an installation that uses vcbus/core/runtime/topics.yaml as it is."""
    return Settings.from_env({"KAFKA_BOOTSTRAP_SERVERS": "unused"})


def table_names() -> set[str]:
    """The topics of the topic table, vcbus/core/runtime/topics.yaml (without prefix)."""
    table = yaml.safe_load(SHIPPED_TABLE.read_text())
    return {t["name"] for t in table["topics"]}


def matched(pattern: str, text: str) -> re.Match[str]:
    match = re.search(pattern, text, re.M)
    assert match is not None, f"{pattern!r} not found"
    return match


def parsed(arguments: list[str]) -> argparse.Namespace:
    """The CLI's parse of ``vcbus <arguments>`` (argparse exits on an unknown command)."""
    return build_parser().parse_args(arguments)


def k8s_documents() -> Iterator[tuple[Path, dict[str, Any]]]:
    for path in sorted(K8S.glob("*.yaml")):
        for document in yaml.safe_load_all(path.read_text()):
            if document:
                yield path, document


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    return document


@pytest.fixture(scope="module")
def vcbus_services(compose) -> dict[str, dict[str, Any]]:
    return {
        name: service
        for name, service in compose["services"].items()
        if str(service.get("image", "")).startswith("vcbus:") and name not in ("topics", "agent")
    }


def test_the_agent_runs_vcbus_agent_with_its_privileges_stated_when_compose_is_read(compose):
    agent = compose["services"]["agent"]
    args = parsed(agent["command"])
    assert args.func is agent_command.run
    assert (args.run_as, args.data_dir) == ("nobody", "/var/lib/vcbus-agent")
    assert (agent["user"], agent["privileged"]) == ("0", True)
    assert agent["volumes"] == ["agent-data:/var/lib/vcbus-agent"]
    assert agent["environment"]["OTEL_SERVICE_NAME"] == "agent"
    assert "VCBUS_AGENT_TOKEN" in agent["environment"]
    assert f":{args.listen_port}/healthz" in " ".join(agent["healthcheck"]["test"])


def test_the_agent_daemonset_runs_vcbus_agent_on_the_hosts_network_when_manifests_are_read():
    (daemonset,) = [d for _, d in k8s_documents() if d["kind"] == "DaemonSet"]
    pod = daemonset["spec"]["template"]["spec"]
    container = pod["containers"][0]
    args = parsed(container["args"])
    assert args.func is agent_command.run
    assert (args.node_name, args.address) == ("$(NODE_NAME)", "$(NODE_IP)")
    env = {e["name"]: e.get("valueFrom", {}).get("fieldRef", {}) for e in container["env"]}
    assert env["NODE_NAME"] == {"fieldPath": "spec.nodeName"}
    assert env["NODE_IP"] == {"fieldPath": "status.hostIP"}
    assert pod["hostNetwork"] is True
    assert container["securityContext"] == {"runAsUser": 0, "privileged": True}
    data = next(v for v in pod["volumes"] if v["name"] == "data")
    assert data["hostPath"]["path"] == args.data_dir
    assert {"secretRef": {"name": "vcbus-agent", "optional": True}} in container["envFrom"]
    # on the node's loopback: without a certificate the endpoint listens there only
    assert f"('127.0.0.1', {args.listen_port})" in " ".join(
        container["livenessProbe"]["exec"]["command"]
    )


def test_kafka_is_kraft_and_jaeger_is_v2_with_otlp_when_compose_is_read(compose):
    kafka = compose["services"]["kafka"]
    assert kafka["image"].startswith("apache/kafka:")
    assert "controller" in kafka["environment"]["KAFKA_PROCESS_ROLES"]
    jaeger = compose["services"]["jaeger"]
    assert re.fullmatch(r"jaegertracing/jaeger:2\.\d+\.\d+", jaeger["image"])
    published = {int(port.split(":")[0]) for port in jaeger["ports"]}
    assert {4317, 4318, 16686} <= published


def test_every_service_runs_a_real_cli_command_with_replicas_when_compose_is_read(vcbus_services):
    assert set(vcbus_services) == set(SERVICE_NAMES)
    for name, service in vcbus_services.items():
        args = parsed(service["command"])
        assert args.func is serve_command.run
        assert args.service == name
        replicas = service["deploy"]["replicas"]
        assert replicas >= 2, f"{name} runs {replicas} replica"
        assert service["depends_on"]["topics"]["condition"] == "service_completed_successfully"


def test_traces_go_to_jaeger_under_each_service_name_when_compose_is_read(compose, vcbus_services):
    for name, service in vcbus_services.items():
        env = service["environment"]
        assert env["OTEL_SERVICE_NAME"] == name
        assert env["OTEL_TRACES_EXPORTER"] == "otlp"
        host, port = matched(
            r"^http://([\w-]+):(\d+)$", env["OTEL_EXPORTER_OTLP_ENDPOINT"]
        ).groups()
        assert host in compose["services"]
        assert host == "jaeger"
        assert port == "4318"  # the exporter speaks OTLP over HTTP
        bootstrap_host = env["KAFKA_BOOTSTRAP_SERVERS"].split(":")[0]
        assert bootstrap_host in compose["services"]
        assert "8080/readyz" in " ".join(service["healthcheck"]["test"])


def test_scheduler_conf_is_mounted_where_given_when_compose_is_read(vcbus_services):
    for name, option in SCHEDULER_CONF_OPTION.items():
        service = vcbus_services[name]
        path = service["command"][service["command"].index(option) + 1]
        source, target = service["volumes"][0].split(":")[:2]
        assert path.startswith(f"{target}/")
        assert (ROOT / source / Path(path).name).is_file()


def test_topic_step_runs_vcbus_topics_for_one_broker_when_compose_is_read(compose):
    step = compose["services"]["topics"]
    assert step["depends_on"]["kafka"]["condition"] == "service_healthy"
    assert step["image"] == compose["services"]["admission"]["image"]
    assert parsed(step["command"]).func is topics_command.run
    kafka_nodes = compose["services"]["kafka"]["environment"]["KAFKA_CONTROLLER_QUORUM_VOTERS"]
    assert len(kafka_nodes.split(",")) == 1
    for service in compose["services"].values():
        if str(service.get("image", "")).startswith("vcbus:"):
            env = service["environment"]
            assert (env["VCBUS_REPLICATION_FACTOR"], env["VCBUS_MIN_INSYNC_REPLICAS"]) == ("1", "1")


def test_topic_table_lists_exactly_the_topics_in_use_when_compared_with_the_code():
    """A topic added to the contracts (or a new store or lease) goes in the topic table."""
    settings = shipped_settings()
    expected = {
        config.name.removeprefix(PREFIX)
        for config in topic_configs(services(settings), PREFIX, 4, settings.topics)
    }
    listed = table_names()
    assert not listed - expected, "vcbus/core/runtime/topics.yaml names topics no service uses"
    assert not expected - listed, "topics in use are missing from vcbus/core/runtime/topics.yaml"


def test_topic_table_keeps_tables_and_changelogs_and_suits_three_brokers_when_read():
    table = shipped_settings().topics
    assert table.default.replication_factor == 3
    assert table.default.configs["min.insync.replicas"] == "2"
    for name in table_names():
        policy = table.policy(name)
        assert policy.replication_factor == 3, name
        assert policy.configs["min.insync.replicas"] == "2", name
        if name.endswith(".changelog") or name in COMPACTED:
            assert policy.configs.get("cleanup.policy") == "compact", name
        elif name.endswith(".lease"):
            assert policy.configs.keys() == {"min.insync.replicas"}, name
        else:
            assert policy.kept == (name in KEPT_FOREVER), name
            assert policy.configs["retention.ms"] == ("-1" if name in KEPT_FOREVER else WEEK), name
    for service in services(shipped_settings()):
        service_topics(table, service, PREFIX, 4)  # refuses a table its views would lose


def test_the_image_installs_the_package_with_its_data_when_the_dockerfile_is_read():
    """The topic table and the demo jobs are package data: the image needs no copy of its own."""
    text = (DEPLOY / "Dockerfile").read_text()
    assert matched(r"^RUN uv sync (.+)$", text).group(1).split() == [
        "--locked",
        "--no-editable",
        "--no-cache",
    ]
    assert "VCBUS_TOPICS_FILE" not in text
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert "*.yaml" in package_data["package-data"]["*"]  # the topic table is one
    assert SHIPPED_TABLE.is_file()


def test_entrypoint_is_the_cli_and_command_parses_when_the_dockerfile_is_read():
    text = (DEPLOY / "Dockerfile").read_text()
    entrypoint = yaml.safe_load(matched(r"^ENTRYPOINT (.+)$", text).group(1))
    command = yaml.safe_load(matched(r"^CMD (.+)$", text).group(1))
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert entrypoint == ["vcbus"]
    assert scripts["vcbus"] == "vcbus.services.cli:main"
    assert parsed(command).func is serve_command.run
    for source in re.findall(r"^COPY (?!--from)(\S+)", text, re.M):
        assert (ROOT / source).exists(), source


def test_every_manifest_parses_and_is_listed_when_kustomization_is_read():
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    files = {path.name for path in K8S.glob("*.yaml")} - {"kustomization.yaml"}
    assert set(kustomization["resources"]) == files
    kinds = [document["kind"] for _, document in k8s_documents()]
    assert kinds.count("Deployment") == len(SERVICE_NAMES)


KAFKA_SETTINGS = (
    [
        {"configMapRef": {"name": "vcbus-settings"}},
        {"secretRef": {"name": "vcbus-kafka", "optional": True}},
    ],
    {"name": "kafka-tls", "mountPath": "/etc/vcbus/kafka-tls", "readOnly": True},
    {"name": "kafka-tls", "secret": {"secretName": "vcbus-kafka-tls", "optional": True}},
)
"""The settings, the optional Secret of SASL/TLS variables, and its optional TLS files."""


def kafka_settings(pod: dict[str, Any], container: dict[str, Any]) -> tuple[Any, Any, Any]:
    """Where a workload's Kafka settings come from: envFrom, the TLS mount and its volume."""
    mount = next(m for m in container.get("volumeMounts", []) if m["name"] == "kafka-tls")
    volume = next(v for v in pod.get("volumes", []) if v["name"] == "kafka-tls")
    return container["envFrom"], mount, volume


def test_deployments_run_cli_commands_with_probes_and_resources_when_manifests_are_read():
    settings = next(
        d
        for _, d in k8s_documents()
        if d["kind"] == "ConfigMap" and d["metadata"]["name"] == "vcbus-settings"
    )
    assert {"KAFKA_BOOTSTRAP_SERVERS", "OTEL_EXPORTER_OTLP_ENDPOINT"} <= set(settings["data"])
    port = int(settings["data"]["VCBUS_HEALTH_PORT"])
    seen = set()
    for _, document in k8s_documents():
        if document["kind"] != "Deployment":
            continue
        name = document["metadata"]["name"]
        pod = document["spec"]["template"]["spec"]
        container = pod["containers"][0]
        args = parsed(container["args"])
        assert args.func is serve_command.run
        assert args.service == name
        assert document["spec"]["replicas"] >= (2 if name in SCALABLE | SINGLETONS else 1)
        ports = {p["name"]: p["containerPort"] for p in container["ports"]}
        assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
        assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
        assert ports["http"] == port
        assert {"cpu", "memory"} <= set(container["resources"]["requests"])
        assert kafka_settings(pod, container) == KAFKA_SETTINGS
        env = {e["name"]: e.get("value") for e in container["env"]}
        assert env["OTEL_SERVICE_NAME"] == name
        seen.add(name)
    assert seen == set(SERVICE_NAMES)


def test_scheduler_configmap_is_the_deploy_conf_and_mounted_when_manifests_are_read():
    documents = list(k8s_documents())
    conf = next(
        d
        for _, d in documents
        if d["kind"] == "ConfigMap" and d["metadata"]["name"] == "vcbus-scheduler"
    )
    for key, text in conf["data"].items():
        assert text == (DEPLOY / "scheduler" / key).read_text()
        parse_conf(text)
    for _, document in documents:
        if (
            document["kind"] != "Deployment"
            or document["metadata"]["name"] not in SCHEDULER_CONF_OPTION
        ):
            continue
        name = document["metadata"]["name"]
        pod = document["spec"]["template"]["spec"]
        args = pod["containers"][0]["args"]
        path = Path(args[args.index(SCHEDULER_CONF_OPTION[name]) + 1])
        mount = pod["containers"][0]["volumeMounts"][0]
        volume = next(v for v in pod["volumes"] if v["name"] == mount["name"])
        assert volume["configMap"]["name"] == "vcbus-scheduler"
        assert str(path.parent) == mount["mountPath"]
        assert path.name in conf["data"]


def test_topic_job_runs_vcbus_topics_with_the_settings_when_manifests_are_read():
    documents = [d for _, d in k8s_documents()]
    job = next(d for d in documents if d["kind"] == "Job")
    pod = job["spec"]["template"]["spec"]
    container = pod["containers"][0]
    deployment = next(d for d in documents if d["kind"] == "Deployment")
    assert container["image"] == deployment["spec"]["template"]["spec"]["containers"][0]["image"]
    assert parsed(container["args"]).func is topics_command.run
    assert kafka_settings(pod, container) == KAFKA_SETTINGS  # SASL/TLS as the services have them
    settings = next(
        d
        for d in documents
        if d["kind"] == "ConfigMap" and d["metadata"]["name"] == "vcbus-settings"
    )
    assert "VCBUS_REPLICATION_FACTOR" not in settings["data"]  # a Kafka of 3 brokers


def test_every_setting_is_documented_when_deploy_files_use_it(compose):
    """In docs/configuration.md, the page of every setting the README links."""
    readme = (ROOT / "docs" / "configuration.md").read_text()
    texts = [
        (ROOT / "docker-compose.yml").read_text(),
        *(p.read_text() for p in K8S.glob("*.yaml")),
    ]
    texts.append((DEPLOY / "Dockerfile").read_text())
    used = {name for text in texts for name in re.findall(r"\bVCBUS_[A-Z_]+\b", text)}
    assert used
    assert not {name for name in used if f"`{name}`" not in readme}


def test_make_up_builds_the_image_before_starting_as_docs_operations_says():
    makefile = (ROOT / "Makefile").read_text()
    recipe = matched(r"^up:\n\t(.+)$", makefile).group(1)
    assert recipe == "docker compose up -d --build"
    assert "docker compose up -d --build" in (ROOT / "docs" / "operations.md").read_text()


def test_each_compose_replica_is_its_own_instance_when_started_in_its_container(
    vcbus_services, monkeypatch
):
    """Compose gives every replica the same command: the instance comes from the container."""
    monkeypatch.delenv("VCBUS_INSTANCE", raising=False)
    instances = set()
    for container in ("3f2a9c1b7d10", "8e41d07a2c55"):  # the host names Docker gives
        monkeypatch.setattr("socket.gethostname", lambda name=container: name)
        for service in vcbus_services.values():
            assert "--instance" not in service["command"]
            instances.add((service["command"][1], parsed(service["command"]).instance))
    assert len(instances) == 2 * len(vcbus_services)
    monkeypatch.setenv("VCBUS_INSTANCE", "blue")
    assert parsed(["serve", "admission"]).instance == "blue"


def test_every_probe_sets_its_timeout_when_manifests_are_read():
    """Kubernetes' default probe timeout is 1 s: a probe should say how long it waits."""
    probes = 0
    for _, document in k8s_documents():
        if document["kind"] not in ("Deployment", "DaemonSet"):
            continue
        for container in document["spec"]["template"]["spec"]["containers"]:
            for kind in ("startupProbe", "livenessProbe", "readinessProbe"):
                if kind in container:
                    probes += 1
                    assert container[kind].get("timeoutSeconds", 0) >= 2, (document, kind)
    assert probes >= 16
