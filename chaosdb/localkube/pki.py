"""Keys and certificates of a local Kubernetes control plane, made with the ``openssl`` command.

One private CA signs the apiserver's serving certificate and the Chaos Mesh webhook's serving certificate
(both for ``127.0.0.1`` and the cluster's own loopback address); the controller-manager signs with the same CA;
service-account tokens are signed with their own RSA pair. Keys are mode 600. Nothing here is reused outside
the cluster's folder, and ``down --purge`` removes it all.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from chaosdb.core.errors import ChaosDBError

__all__ = ["Pki", "make_pki"]


class Pki:
    """Where each file of the cluster's PKI lives (under ``<cluster>/pki``)."""

    def __init__(self, directory: Path) -> None:
        self.dir = Path(directory)
        self.ca_key, self.ca_crt = self.dir / "ca.key", self.dir / "ca.crt"
        self.apiserver_key, self.apiserver_crt = self.dir / "apiserver.key", self.dir / "apiserver.crt"
        self.sa_key, self.sa_pub = self.dir / "sa.key", self.dir / "sa.pub"
        self.webhook_dir = self.dir / "webhook"  # tls.crt / tls.key, as Chaos Mesh's CERTS_DIR wants them

    def complete(self) -> bool:
        return all(p.exists() for p in (self.ca_key, self.ca_crt, self.apiserver_key, self.apiserver_crt,
                                         self.sa_key, self.sa_pub, self.webhook_dir / "tls.crt",
                                         self.webhook_dir / "tls.key"))


def _openssl(*args: str, cwd: Path) -> None:
    exe = shutil.which("openssl")
    if not exe:
        raise ChaosDBError("the local Kubernetes cluster makes its certificates with the openssl command, which "
                           "is not installed (apt-get install openssl)")
    done = subprocess.run([exe, *args], cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise ChaosDBError(f"openssl {args[0]} failed: {done.stderr.strip()[-400:]}")


def _key(path: Path) -> None:
    _openssl("genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", str(path), cwd=path.parent)
    os.chmod(path, 0o600)


def _signed(pki: Pki, key: Path, crt: Path, subject: str, ips: list[str], dns: list[str]) -> None:
    _key(key)
    csr = crt.with_suffix(".csr")
    ext = crt.with_suffix(".ext")
    alt = ",".join([f"IP:{ip}" for ip in ips] + [f"DNS:{d}" for d in dns])
    ext.write_text(f"subjectAltName={alt}\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
                   "extendedKeyUsage=serverAuth,clientAuth\nbasicConstraints=critical,CA:FALSE\n")
    _openssl("req", "-new", "-key", str(key), "-subj", subject, "-out", str(csr), cwd=pki.dir)
    _openssl("x509", "-req", "-in", str(csr), "-CA", str(pki.ca_crt), "-CAkey", str(pki.ca_key), "-CAcreateserial",
             "-days", "825", "-sha256", "-extfile", str(ext), "-out", str(crt), cwd=pki.dir)
    csr.unlink()
    ext.unlink()


def make_pki(directory: Path, addresses: list[str]) -> Pki:
    """Create the CA, the apiserver and webhook serving certificates and the service-account pair (once)."""
    pki = Pki(directory)
    if pki.complete():
        return pki
    pki.dir.mkdir(parents=True, exist_ok=True)
    os.chmod(pki.dir, 0o700)
    pki.webhook_dir.mkdir(exist_ok=True)
    _key(pki.ca_key)
    _openssl("req", "-x509", "-new", "-key", str(pki.ca_key), "-subj", "/CN=chaosdb-local-kubernetes-ca",
             "-days", "825", "-sha256", "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign,digitalSignature", "-out", str(pki.ca_crt),
             cwd=pki.dir)
    ips = sorted({"127.0.0.1", *addresses, "10.96.0.1"})
    _signed(pki, pki.apiserver_key, pki.apiserver_crt, "/CN=kube-apiserver", ips,
            ["localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"])
    _signed(pki, pki.webhook_dir / "tls.key", pki.webhook_dir / "tls.crt", "/CN=chaos-mesh-controller-manager",
            sorted({"127.0.0.1", *addresses}), ["localhost", "chaos-mesh-controller-manager.chaos-mesh.svc"])
    _key(pki.sa_key)
    _openssl("pkey", "-in", str(pki.sa_key), "-pubout", "-out", str(pki.sa_pub), cwd=pki.dir)
    return pki
