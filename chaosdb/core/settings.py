"""One name per setting: every configuration key of the shipped experiments and the one environment variable that
sets it (the same in every experiment family and in the game-day CronJob).

The shipped experiments read each value with ``{"type": "env", "key": SETTINGS[key].env}``; a test holds every
shipped experiment to this table, and ``docs/running-experiments.md`` prints it (:func:`markdown_table`).

Every read of the environment is here: the pack's own variables (``CHAOSDB_*``: the settings above and
:data:`ENVIRONMENT_ONLY`) through :func:`env_value`, the system's and other tools' (:data:`SYSTEM_VARIABLES`: the
XDG folders, ``PATH``, ``KUBECONFIG``...) through :func:`system_value`, a variable an experiment names in a
``{"type": "env", "key": ...}`` entry through :func:`referenced_value`, and the whole environment handed to a child
process through :func:`process_environment`. A test holds every other module to this.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

__all__ = ["Setting", "SETTINGS", "ENVIRONMENT_ONLY", "SYSTEM_VARIABLES", "setting_of_env",
           "markdown_table", "env_entry", "env_entries", "secret_environment_values", "env_value",
           "system_value", "referenced_value", "process_environment"]


@dataclass(frozen=True)
class Setting:
    key: str
    env: str
    meaning: str
    secret: bool = False


_TLS_SERVICES = {"patroni": "Patroni REST API", "etcd": "etcd", "pd": "PD", "cockroach": "CockroachDB HTTP",
                 "postgres": "PostgreSQL", "chaosd": "chaosd"}
_TLS_MEANINGS = {"ca_file": "CA file that signed the {label} servers' certificates",
                 "cert_file": "client certificate for the {label}",
                 "key_file": "key of that client certificate",
                 "tls_verify": "false: do not check the {label} server's certificate (warned on every run)"}

SETTINGS: dict[str, Setting] = {s.key: s for s in [
    Setting("chaosdb_cluster", "CHAOSDB_CLUSTER", "name of the embedded cluster the run starts or uses"),
    Setting("address_base", "CHAOSDB_ADDRESS_BASE", "loopback address of the embedded cluster's first node"),
    Setting("report_dir", "CHAOSDB_REPORT_DIR", "where the run's samples and report go"),
    Setting("baseline_s", "CHAOSDB_BASELINE_S", "seconds of load measured as the baseline before the fault"),
    Setting("k8s_namespace", "CHAOSDB_K8S_NAMESPACE", "Kubernetes namespace of the database's pods"),
    Setting("k8s_kubeconfig", "CHAOSDB_KUBECONFIG", "kubeconfig file (empty: in-cluster, else ~/.kube/config)"),
    Setting("k8s_container", "CHAOSDB_K8S_CONTAINER", "the database container of a pod"),
    Setting("statefulset", "CHAOSDB_STATEFULSET", "the database's StatefulSet"),
    Setting("pod_selector", "CHAOSDB_POD_SELECTOR", "label selector of the database's pods"),
    Setting("target_pod", "CHAOSDB_TARGET_POD", "the pod a pod-level fault aims at"),
    Setting("replicas_after", "CHAOSDB_REPLICAS_AFTER", "replicas after a scale-out"),
    Setting("chaos_namespace", "CHAOSDB_CHAOS_NAMESPACE", "namespace of the Chaos Mesh / Litmus objects"),
    Setting("chaos_duration", "CHAOSDB_CHAOS_DURATION", "how long a Chaos Mesh fault lasts (Go duration)"),
    Setting("latency", "CHAOSDB_LATENCY", "network delay of a NetworkChaos (Go duration)"),
    Setting("health_url", "CHAOSDB_HEALTH_URL", "an HTTP health endpoint of the database (CockroachDB)"),
    Setting("cockroach_url", "CHAOSDB_COCKROACH_URL", "CockroachDB SQL URL (a secret where it has a password; "
            "also the load's DSN)", secret=True),
    Setting("cockroach_host", "CHAOSDB_COCKROACH_HOST", "host:port for the cockroach CLI"),
    Setting("cockroach_certs_dir", "CHAOSDB_COCKROACH_CERTS_DIR", "certs directory for the cockroach CLI"),
    Setting("cockroach_insecure", "CHAOSDB_COCKROACH_INSECURE", "true: the CLI talks to an insecure cluster"),
    Setting("cockroach_bin", "CHAOSDB_COCKROACH_BIN", "the cockroach binary"),
    Setting("cockroach_cli_pod", "CHAOSDB_COCKROACH_CLI_POD", "[namespace/]pod the cockroach CLI runs in "
            "(exec through the Kubernetes API, container k8s_container)"),
    Setting("pd_url", "CHAOSDB_PD_URL", "PD's HTTP API (TiKV)"),
    Setting("chaosd_url", "CHAOSDB_CHAOSD_URL", "chaosd's API on the database's machine (chaosdb.chaosd.actions; "
                                                "default: the chaosd 'cluster up --chaosd' started)"),
    Setting("chaosd_binary", "CHAOSDB_CHAOSD_BINARY", "a chaosd binary the embedded-cluster control starts beside "
                                                      "the cluster (unless chaosd_url names one)"),
    Setting("chaosd_via", "CHAOSDB_CHAOSD_VIA", "who asks chaosd: chaosd (this pack, default) or chaos-mesh "
                                                "(PhysicalMachineChaos objects the Chaos Mesh controller carries out)"),
    Setting("chaosd_physical_machine", "CHAOSDB_CHAOSD_PHYSICAL_MACHINE",
            "namespace/name of the PhysicalMachine the PhysicalMachineChaos objects select (default: chaosd_url as "
            "their address)"),
    Setting("tikv_key", "CHAOSDB_TIKV_KEY", "the key whose region's leader or follower is the target"),
    Setting("tikv_role", "CHAOSDB_TIKV_ROLE", "tikv-leader or tikv-follower", ),
    Setting("tikv_mode", "CHAOSDB_TIKV_MODE", "raw or txn: how the TiKV key is encoded"),
    Setting("patroni_urls", "CHAOSDB_PATRONI_URLS", "Patroni REST API URLs, comma separated"),
    Setting("patroni_pods", "CHAOSDB_PATRONI_PODS", "Patroni member -> pod (member=pod,... or JSON)"),
    Setting("secure", "CHAOSDB_SECURE", "true: the embedded cluster the run creates speaks TLS with client "
            "certificates and passwords (chaosdb cluster up --secure)"),
    *[Setting(f"{service}_{suffix}", f"CHAOSDB_{service.upper()}_{suffix.upper()}", meaning.format(label=label))
      for service, label in _TLS_SERVICES.items()
      for suffix, meaning in _TLS_MEANINGS.items()],
    Setting("postgres_sslmode", "CHAOSDB_POSTGRES_SSLMODE", "libpq sslmode (default verify-full with a CA file)"),
]}

#: variables the pack reads itself, outside any experiment's configuration
ENVIRONMENT_ONLY: dict[str, str] = {
    "CHAOSDB_HOME": "where clusters and fault records live (default /var/lib/chaosdb as root, else ~/.local/state/chaosdb)",
    "CHAOSDB_FAULTS_DIR": "where local fault records are kept",
    "CHAOSDB_LOAD_DSN": "the load's DSN when the experiment gives none (a secret)",
    "CHAOSDB_MANIFESTS": "a folder of your own manifest templates instead of the shipped ones",
    "CHAOSDB_BIN_DIR": "where server binaries (PD, Kubernetes, Chaos Mesh) are found",
    **{f"CHAOSDB_{service.upper()}_{what.upper()}": f"the {what} for {label} when the experiment's secrets have no "
                                                    f"{service}_{what} (a secret)"
       for service, label in (("patroni", "Patroni's REST API"), ("etcd", "etcd"), ("cockroach", "the CockroachDB "
                                                                                               "HTTP login"))
       for what in ("username", "password")},
    "CHAOSDB_POSTGRES_PASSWORD": "the PostgreSQL password when the secrets have no postgres_password (a secret)",
    "CHAOSDB_CLUSTER_DIR": "the embedded cluster's folder when neither the arguments nor the configuration name a "
                           "cluster",
    "CHAOSDB_IMAGE_CACHE": "where built container images are kept (default /var/cache/chaosdb/images as root, else "
                           "$XDG_CACHE_HOME/chaosdb/images)",
    "CHAOSDB_CGROUP_ROOT": "where the cgroup hierarchy is mounted (default /sys/fs/cgroup; read when the local "
                           "faults are first imported)",
    "CHAOSDB_SAMPLES_DISABLED": "1: the load's Locust users record no samples (only for the benchmark that measures "
                                "what recording costs)",
}

#: variables of the system and of other tools that the pack follows (never its own configuration), with why
SYSTEM_VARIABLES: dict[str, str] = {
    "XDG_STATE_HOME": "the XDG base folder of the default CHAOSDB_HOME",
    "XDG_CACHE_HOME": "the XDG base folder of the binaries and images caches",
    "XDG_RUNTIME_DIR": "the XDG runtime folder that holds a user's fault records",
    "PATH": "where a saved server command is looked for again before it is restarted",
    "PYTHONPATH": "handed on to Patroni, which runs with this interpreter and must find the same packages",
    "CC": "the C compiler of the shipped C programs (make's convention)",
    "KUBECONFIG": "the Kubernetes client's own kubeconfig variable, after the experiment's k8s_kubeconfig",
    "KUBERNETES_SERVICE_HOST": "set by Kubernetes in every pod: the client may use the in-cluster configuration",
}


#: the variables of :data:`ENVIRONMENT_ONLY` that hold secrets
SECRET_ENVIRONMENT = ("CHAOSDB_LOAD_DSN", "CHAOSDB_PATRONI_PASSWORD", "CHAOSDB_ETCD_PASSWORD",
                      "CHAOSDB_COCKROACH_PASSWORD", "CHAOSDB_POSTGRES_PASSWORD")


def secret_environment_values() -> list[str]:
    """The values (4 characters or more) of the variables this pack reads secrets from that are set here: the
    secret settings (``CHAOSDB_COCKROACH_URL``), the passwords and the load's DSN."""
    names = [s.env for s in SETTINGS.values() if s.secret] + list(SECRET_ENVIRONMENT)
    return [os.environ[n] for n in names if len(os.environ.get(n, "")) >= 4]


def env_value(name: str, default: str = "") -> str:
    """The value of the pack's variable *name* (``CHAOSDB_*``: a setting's variable or one of
    :data:`ENVIRONMENT_ONLY`), else *default* (as ``os.environ.get``: a variable set to "" is "")."""
    if not name.startswith("CHAOSDB_"):
        raise ValueError(f"{name} is not one of chaosdb's variables: read it with system_value or referenced_value")
    return os.environ.get(name, default)


def system_value(name: str, default: str = "") -> str:
    """The value of a variable of the system or of another tool (:data:`SYSTEM_VARIABLES`), else *default*."""
    if name.startswith("CHAOSDB_"):
        raise ValueError(f"{name} is one of chaosdb's own variables: read it with env_value")
    return os.environ.get(name, default)


def referenced_value(name: str, default: Any = None) -> Any:
    """The value of the variable an experiment names in a ``{"type": "env", "key": name}`` entry (Chaos
    Toolkit's own way of reading the environment: the experiment chooses the name), else *default*."""
    return os.environ.get(name, default)


def process_environment(**extra: str) -> dict[str, str]:
    """A copy of this process's environment, plus *extra*, for a child process (which reads what it needs)."""
    return {**os.environ, **extra}


def env_entry(key: str, default: str = "") -> dict[str, str]:
    """An experiment's configuration entry reading *key* from its one variable."""
    return {"type": "env", "key": SETTINGS[key].env, "default": default}


def env_entries(*keys: str) -> dict[str, dict[str, str]]:
    """:func:`env_entry` for each key, empty by default (the TLS keys: unset means "not given")."""
    return {key: env_entry(key) for key in keys}


def setting_of_env(env: str) -> Setting | None:
    """The setting an environment variable sets."""
    for s in SETTINGS.values():
        if env == s.env:
            return s
    return None


def markdown_table() -> str:
    """The settings as a Markdown table (configuration key, environment variable, meaning), then the variables the
    pack reads itself and those of the system it follows."""
    rows = ["| configuration key | environment variable | meaning |", "| --- | --- | --- |"]
    for s in SETTINGS.values():
        rows.append(f"| `{s.key}` | `{s.env}` | {s.meaning}{' (secret)' if s.secret else ''} |")
    rows += ["", "| read by the pack itself | meaning |", "| --- | --- |"]
    rows += [f"| `{k}` | {v} |" for k, v in ENVIRONMENT_ONLY.items()]
    rows += ["", "| the system's or another tool's, followed by the pack | meaning |", "| --- | --- |"]
    rows += [f"| `{k}` | {v} |" for k, v in SYSTEM_VARIABLES.items()]
    return "\n".join(rows) + "\n"
