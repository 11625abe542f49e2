"""A private CA for the clusters this pack starts itself, made with the ``openssl`` command.

:func:`make_ca` creates a CA key and certificate; :func:`issue` signs a key pair for a server (IP and DNS names in
``subjectAltName``) or a client (``clientAuth``). Keys are mode 600. Used by the local Kubernetes control plane
and by the secure embedded clusters; nothing here is for production CAs.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from chaosdb.core.errors import ChaosDBError

__all__ = ["openssl", "make_key", "make_ca", "issue", "cluster_ca"]

DAYS = "825"


def openssl(*args: str, cwd: Path) -> None:
    """Run ``openssl ARGS`` in *cwd*; its error output when it fails."""
    exe = shutil.which("openssl")
    if not exe:
        raise ChaosDBError("the certificates of a local cluster are made with the openssl command, which is not "
                           "installed (apt-get install openssl)")
    done = subprocess.run([exe, *args], cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise ChaosDBError(f"openssl {args[0]} failed: {done.stderr.strip()[-400:]}")


def make_key(path: Path) -> None:
    """An RSA 2048 private key at *path* (mode 600)."""
    openssl("genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", str(path), cwd=path.parent)
    os.chmod(path, 0o600)


def make_ca(key: Path, crt: Path, common_name: str, days: str = DAYS) -> None:
    """A self-signed CA (key and certificate)."""
    make_key(key)
    openssl("req", "-x509", "-new", "-key", str(key), "-subj", f"/CN={common_name}", "-days", days, "-sha256",
            "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign,digitalSignature", "-out", str(crt), cwd=crt.parent)


def issue(ca_key: Path, ca_crt: Path, key: Path, crt: Path, common_name: str, ips: list[str] = (),  # type: ignore[assignment]
          dns: list[str] = (), usage: str = "serverAuth,clientAuth", days: str = DAYS,  # type: ignore[assignment]
          organization: str = "") -> None:
    """A key and a certificate signed by the CA: for *common_name* (in *organization*, a Kubernetes group, when
    given), with *ips* and *dns* as alternative names, extended key usage *usage*."""
    make_key(key)
    csr, ext = crt.with_suffix(".csr"), crt.with_suffix(".ext")
    lines = []
    alt = ",".join([f"IP:{ip}" for ip in ips] + [f"DNS:{d}" for d in dns])
    if alt:
        lines.append(f"subjectAltName={alt}")
    lines += ["keyUsage=critical,digitalSignature,keyEncipherment", f"extendedKeyUsage={usage}",
              "basicConstraints=critical,CA:FALSE"]
    ext.write_text("\n".join(lines) + "\n")
    try:
        subject = (f"/O={organization}" if organization else "") + f"/CN={common_name}"
        openssl("req", "-new", "-key", str(key), "-subj", subject, "-out", str(csr), cwd=crt.parent)
        openssl("x509", "-req", "-in", str(csr), "-CA", str(ca_crt), "-CAkey", str(ca_key), "-CAcreateserial",
                "-days", days, "-sha256", "-extfile", str(ext), "-out", str(crt), cwd=crt.parent)
    finally:
        csr.unlink(missing_ok=True)
        ext.unlink(missing_ok=True)
        ca_crt.with_suffix(".srl").unlink(missing_ok=True)  # -CAcreateserial's file: a fresh random serial each time


def cluster_ca(directory: Path, common_name: str) -> bool:
    """A cluster's CA (``ca.key``, ``ca.crt``) and the client certificate its experiments use (``client.key``,
    ``client.crt``) in *directory*, made once; the certificates are readable by all, the keys by their owner only.
    True when they were made now."""
    d = Path(directory)
    if (d / "client.key").exists():
        return False
    d.mkdir(parents=True, exist_ok=True)
    os.chmod(d, 0o755)
    make_ca(d / "ca.key", d / "ca.crt", common_name)
    issue(d / "ca.key", d / "ca.crt", d / "client.key", d / "client.crt", "chaosdb-client", usage="clientAuth")
    for public in ("ca.crt", "client.crt"):
        os.chmod(d / public, 0o644)
    return True

