"""The instance files of deploy/ load as Dagster loads them, against the session's throwaway Postgres: the lake's
(runs at once) and, composed with it, the Kubernetes launcher's."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import yaml
from dagster_k8s import K8sRunLauncher
from dagster_postgres import PostgresRunStorage

from eval_pipeline.settings import PROJECT_ROOT

DEPLOY = PROJECT_ROOT / "deploy"
KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: test, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: test, user: {token: not-a-real-token}}]
contexts: [{name: test, context: {cluster: test, user: test, namespace: eval}}]
current-context: test
"""


def test_the_lake_instance_runs_four_at_once_on_postgres(tmp_path, postgres_env):
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text((DEPLOY / "dagster-lake.yaml").read_text())
    with dg.DagsterInstance.from_config(str(home)) as instance:
        assert isinstance(instance.run_storage, PostgresRunStorage)
        assert instance.get_concurrency_config().run_queue_config.max_concurrent_runs == 4
        assert instance.global_op_concurrency_default_limit == 4
        assert instance.run_monitoring_settings["free_slots_after_run_end_seconds"] == 30


def test_the_kubernetes_launcher_loads_in_place_of_the_local_one(tmp_path: Path, postgres_env):
    instance_settings = yaml.safe_load((DEPLOY / "dagster-lake.yaml").read_text())
    instance_settings |= yaml.safe_load((DEPLOY / "dagster-k8s.yaml").read_text())  # as its header says
    (tmp_path / "kubeconfig").write_text(KUBECONFIG)  # outside a cluster: no in-cluster config to load
    instance_settings["run_launcher"]["config"] |= {
        "load_incluster_config": False,
        "kubeconfig_file": str(tmp_path / "kubeconfig"),
    }
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text(yaml.safe_dump(instance_settings))
    with dg.DagsterInstance.from_config(str(home)) as instance:
        launcher = instance.run_launcher
        assert isinstance(launcher, K8sRunLauncher)
        assert launcher.job_image == "registry.internal/eval-pipeline:0.1.0" and launcher.job_namespace == "eval"
        assert launcher.env_secrets == ["eval-pipeline-secrets"] and launcher.env_config_maps[-1] == "eval-pipeline-settings"
        assert launcher.supports_check_run_worker_health and instance.run_monitoring_enabled
        assert instance.get_concurrency_config().run_queue_config.max_concurrent_runs == 4
