"""The official ``kubernetes`` Python client, configured per experiment and with errors a person can act on.

Configuration keys (experiment ``configuration`` or secrets): ``k8s_kubeconfig`` (path; else ``$KUBECONFIG``
or ``~/.kube/config``), ``k8s_context``, ``k8s_namespace`` (default namespace of the objects), and
``k8s_in_cluster: true`` (or running in a pod with no kubeconfig) for the pod's service account.

Unlike ``chaosk8s.create_k8s_api_client`` this builds a private client per kubeconfig/context instead of
changing the process-wide default configuration, so one experiment can talk to two clusters and the
settings come from the experiment, not only from environment variables.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any, Callable, TypeVar

from chaosdb.core.errors import ChaosDBError
from chaosdb.core.settings import system_value

__all__ = ["api_client", "custom_objects", "core_v1", "apps_v1", "call", "namespace_of", "reset_clients",
           "K8sApiError", "call_json"]

T = TypeVar("T")
_LOCK = threading.Lock()
_CLIENTS: dict[tuple[str, str, bool], Any] = {}


class K8sApiError(ChaosDBError):
    """A Kubernetes API call failed; ``status`` is the HTTP status (0 when the server was not reached)."""

    def __init__(self, message: str, status: int = 0, reason: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason


def _setting(configuration: dict[str, Any] | None, secrets: dict[str, Any] | None, key: str) -> Any:
    for source in (secrets or {}, configuration or {}):
        if isinstance(source, dict) and source.get(key) not in (None, ""):
            return source[key]
        for scope in (source or {}).values() if isinstance(source, dict) else ():
            if isinstance(scope, dict) and scope.get(key) not in (None, ""):
                return scope[key]
    return None


def namespace_of(configuration: dict[str, Any] | None, namespace: str | None = None) -> str:
    """*namespace*, else configuration ``k8s_namespace``, else ``default``."""
    return str(namespace or (configuration or {}).get("k8s_namespace") or "default")


def _import_client():
    try:
        import kubernetes  # noqa: F401, PLC0415 - needs the k8s extra
        from kubernetes import client, config  # noqa: PLC0415 - needs the k8s extra
    except ImportError:
        raise ChaosDBError("the kubernetes client is not installed: pip install 'chaostoolkit-db[k8s]'") from None
    return client, config


def api_client(configuration: dict[str, Any] | None = None, secrets: dict[str, Any] | None = None):
    """A ``kubernetes.client.ApiClient`` for the experiment's kubeconfig/context (cached per pair)."""
    client, config = _import_client()
    kubeconfig = _setting(configuration, secrets, "k8s_kubeconfig") or system_value("KUBECONFIG") or \
        str(Path("~/.kube/config").expanduser())
    context = _setting(configuration, secrets, "k8s_context") or ""
    in_cluster = bool(_setting(configuration, secrets, "k8s_in_cluster")) or (
        not Path(str(kubeconfig).split(os.pathsep)[0]).is_file() and bool(system_value("KUBERNETES_SERVICE_HOST")))
    key = (str(kubeconfig), str(context), in_cluster)
    with _LOCK:
        if key in _CLIENTS:
            return _CLIENTS[key]
        if in_cluster:
            cfg = client.Configuration()
            try:
                config.load_incluster_config(client_configuration=cfg)
            except config.ConfigException as e:
                raise ChaosDBError(f"in-cluster Kubernetes configuration failed: {e}") from None
            made = client.ApiClient(cfg)
        else:
            first = str(kubeconfig).split(os.pathsep)[0]
            if not Path(first).is_file():
                raise ChaosDBError(f"no kubeconfig at {first}: set k8s_kubeconfig or KUBECONFIG, or run in a pod "
                                   "(k8s_in_cluster: true)")
            try:
                made = config.new_client_from_config(config_file=first, context=context or None)
            except (config.ConfigException, ValueError, KeyError) as e:
                raise ChaosDBError(f"cannot use kubeconfig {first} (context {context or 'current'}): {e}") from None
        _CLIENTS[key] = made
        return made


def reset_clients() -> None:
    """Forget cached clients (tests, or after the kubeconfig file changed)."""
    with _LOCK:
        for c in _CLIENTS.values():
            try:
                c.close()
            except Exception:  # pragma: no cover - closing a pool never matters for correctness
                pass
        _CLIENTS.clear()


def custom_objects(configuration=None, secrets=None):
    """The CustomObjectsApi of the experiment's Kubernetes."""
    client, _ = _import_client()
    return client.CustomObjectsApi(api_client(configuration, secrets))


def core_v1(configuration=None, secrets=None):
    """The CoreV1Api of the experiment's Kubernetes."""
    client, _ = _import_client()
    return client.CoreV1Api(api_client(configuration, secrets))


def apps_v1(configuration=None, secrets=None):
    """The AppsV1Api of the experiment's Kubernetes."""
    client, _ = _import_client()
    return client.AppsV1Api(api_client(configuration, secrets))


#: (connect, read) seconds for every API call unless it says otherwise: a call the server never answers fails
#: with a message instead of holding the experiment forever (the client's own default is to wait for ever)
REQUEST_TIMEOUT = (5.0, 60.0)


def call(what: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run one API call; turn ``ApiException`` / connection errors into :class:`K8sApiError` naming ``what``."""
    from kubernetes.client.exceptions import ApiException  # noqa: PLC0415 - needs the k8s extra
    from urllib3.exceptions import HTTPError  # noqa: PLC0415 - needs the k8s extra

    kwargs.setdefault("_request_timeout", REQUEST_TIMEOUT)
    try:
        return fn(*args, **kwargs)
    except ApiException as e:
        detail = e.reason or ""
        try:
            body = json.loads(e.body or "{}")
            detail = body.get("message") or detail
        except (ValueError, TypeError, AttributeError):
            pass
        hint = {401: " (credentials rejected: check the kubeconfig user)",
                403: " (forbidden: the service account lacks RBAC permission for this)",
                404: " (not found: check the name, namespace and that the CRD is installed)",
                409: " (conflict: it already exists, or it changed meanwhile)",
                422: " (refused by validation)"}.get(e.status or 0, "")
        raise K8sApiError(f"{what} failed: HTTP {e.status} {detail}{hint}", int(e.status or 0),
                          str(e.reason or "")) from None
    except (HTTPError, OSError) as e:
        raise K8sApiError(f"{what} failed: Kubernetes API not reachable ({e})") from None


def call_json(what: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Like :func:`call`, but returns the response body as plain JSON instead of the client's models (which
    are strict about fields some servers and versions omit, and which we would only turn back into dicts)."""
    resp = call(what, fn, *args, _preload_content=False, **kwargs)
    try:
        data = resp.data
        return json.loads(data) if data else {}
    except ValueError:
        raise K8sApiError(f"{what}: the API server did not answer JSON") from None
