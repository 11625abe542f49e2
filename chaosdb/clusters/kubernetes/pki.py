"""Keys and certificates of a local Kubernetes control plane, made with the ``openssl`` command.

One private CA signs the apiserver's serving certificate and the Chaos Mesh webhook's serving certificate
(both for ``127.0.0.1`` and the cluster's own loopback address); the controller-manager signs with the same CA;
service-account tokens are signed with their own RSA pair. Keys are mode 600. Nothing here is reused outside
the cluster's folder, and ``down --purge`` removes it all.
"""

from __future__ import annotations

import os
from pathlib import Path

from chaosdb.core.pki import issue, make_ca, make_key, openssl

__all__ = ["Pki", "make_pki", "CHAOSD_SERVER_NAME", "make_chaosd_pki", "make_kubelet_client"]

#: the name the Chaos Mesh controller expects in chaosd's certificate when CHAOSD_SECURITY_MODE=true (it pins it)
CHAOSD_SERVER_NAME = "chaosd.chaos-mesh.org"


class Pki:
    """Where each file of the cluster's PKI lives (under ``<cluster>/pki``)."""

    def __init__(self, directory: Path) -> None:
        self.dir = Path(directory)
        self.ca_key, self.ca_crt = self.dir / "ca.key", self.dir / "ca.crt"
        self.apiserver_key, self.apiserver_crt = self.dir / "apiserver.key", self.dir / "apiserver.crt"
        self.sa_key, self.sa_pub = self.dir / "sa.key", self.dir / "sa.pub"
        self.webhook_dir = self.dir / "webhook"  # tls.crt / tls.key, as Chaos Mesh's CERTS_DIR wants them
        self.chaosd_dir = self.dir / "chaosd"  # server.* for chaosd --cert/--key, client.* for the controller
        # the apiserver's client certificate towards kubelets (exec, logs), in group system:masters
        self.kubelet_client_key = self.dir / "apiserver-kubelet-client.key"
        self.kubelet_client_crt = self.dir / "apiserver-kubelet-client.crt"

    def complete(self) -> bool:
        """Whether every key and certificate is there already."""
        return all(p.exists() for p in (self.ca_key, self.ca_crt, self.apiserver_key, self.apiserver_crt,
                                         self.sa_key, self.sa_pub, self.webhook_dir / "tls.crt",
                                         self.webhook_dir / "tls.key"))


def make_pki(directory: Path, addresses: list[str]) -> Pki:
    """Create the CA, the apiserver and webhook serving certificates and the service-account pair (once)."""
    pki = Pki(directory)
    if pki.complete():
        return pki
    pki.dir.mkdir(parents=True, exist_ok=True)
    os.chmod(pki.dir, 0o700)
    pki.webhook_dir.mkdir(exist_ok=True)
    make_ca(pki.ca_key, pki.ca_crt, "chaosdb-local-kubernetes-ca")
    ips = sorted({"127.0.0.1", *addresses, "10.96.0.1"})
    issue(pki.ca_key, pki.ca_crt, pki.apiserver_key, pki.apiserver_crt, "kube-apiserver", ips,
          ["localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"])
    issue(pki.ca_key, pki.ca_crt, pki.webhook_dir / "tls.key", pki.webhook_dir / "tls.crt",
          "chaos-mesh-controller-manager",
          sorted({"127.0.0.1", *addresses}), ["localhost", "chaos-mesh-controller-manager.chaos-mesh.svc"])
    make_key(pki.sa_key)
    openssl("pkey", "-in", str(pki.sa_key), "-pubout", "-out", str(pki.sa_pub), cwd=pki.dir)
    return pki


def make_kubelet_client(pki: Pki) -> Pki:
    """The apiserver's client certificate for kubelets (once): kubelet checks it against the cluster's CA and asks the
    apiserver whether its group (``system:masters``) may exec, read logs, forward ports."""
    if not (pki.kubelet_client_key.exists() and pki.kubelet_client_crt.exists()):
        issue(pki.ca_key, pki.ca_crt, pki.kubelet_client_key, pki.kubelet_client_crt, "kube-apiserver-kubelet-client",
              usage="clientAuth", organization="system:masters")
    return pki


def make_chaosd_pki(pki: Pki, addresses: list[str]) -> dict[str, str]:
    """Certificates for mutual TLS between the Chaos Mesh controller and chaosd (once), signed by the cluster's CA:
    chaosd's server certificate names ``chaosd.chaos-mesh.org`` (the name the controller checks) and *addresses*,
    the controller's client certificate is for client authentication only. The files, by use."""
    d = pki.chaosd_dir
    files = {"server_cert": d / "server.crt", "server_key": d / "server.key", "client_cert": d / "client.crt",
             "client_key": d / "client.key", "ca": pki.ca_crt}
    if not all(p.exists() for p in files.values()):
        d.mkdir(parents=True, exist_ok=True)
        os.chmod(d, 0o700)
        issue(pki.ca_key, pki.ca_crt, files["server_key"], files["server_cert"], "chaosd",
              sorted({"127.0.0.1", *addresses}), [CHAOSD_SERVER_NAME, "localhost"], usage="serverAuth")
        issue(pki.ca_key, pki.ca_crt, files["client_key"], files["client_cert"], "chaos-controller-manager",
              usage="clientAuth")
    return {k: str(v) for k, v in files.items()}
