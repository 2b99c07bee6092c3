"""The secrets of a run's control plane, made on the user's machine and kept there.

A control plane's Redis takes a password and speaks TLS only.  `plastic cloud up --control-plane` makes,
once per run, a random password, a CA of the run's own and a server certificate it signs, and keeps them
in ``$PLASTIC_HOME/clouds/RUN_ID/`` (the directory 0700, the password and the keys 0600): the CA key never
leaves this machine.  The instance gets the password, the server's key and certificate and the CA's
certificate in its user data (written there to root-only files), and the agents get the password and
the CA certificate.  Clients trust the run's CA alone and do not check the server's host name (the
instance's address is not known when its certificate is made); only a holder of the run's CA key could
make a certificate they accept.
"""

from __future__ import annotations

import datetime
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from plastic.core.errors import InputError
from plastic.home import plastic_home

SERVER_NAME = "plastic-control-plane"
VALID_DAYS = 365
FILES = ("redis-password", "ca.pem", "ca.key", "server.pem", "server.key")


@dataclass(frozen=True)
class ControlPlaneSecrets:
    directory: Path
    password: str
    ca_pem: bytes
    server_pem: bytes
    server_key_pem: bytes

    @property
    def ca_path(self) -> Path:
        return self.directory / "ca.pem"


def secrets_dir(run_id: str) -> Path:
    return plastic_home() / "clouds" / run_id


def load_or_make(run_id: str) -> ControlPlaneSecrets:
    """The run's secrets: read back when a first `up` made them (a repeated up gives the same), else made."""
    where = secrets_dir(run_id)
    if all((where / name).is_file() for name in FILES):
        return _read(where)
    if where.exists() and any((where / name).exists() for name in FILES):
        raise InputError("holds part of a control plane's secrets only; remove it or put the rest back",
                         source=str(where))
    return make_in(where)


def _read(where: Path) -> ControlPlaneSecrets:
    try:
        return ControlPlaneSecrets(where, (where / "redis-password").read_text().strip(),
                                   (where / "ca.pem").read_bytes(), (where / "server.pem").read_bytes(),
                                   (where / "server.key").read_bytes())
    except OSError as error:
        raise InputError(f"cannot read the control plane's secrets ({error.strerror or error})",
                         source=str(where)) from None


def make_in(where: Path) -> ControlPlaneSecrets:
    """New secrets, written into ``where`` (a dry run's: a directory it throws away)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"plastic run CA {where.name}")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
          .not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                       content_commitment=False, key_encipherment=False, data_encipherment=False,
                                       key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    server = (x509.CertificateBuilder()
              .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, SERVER_NAME)]))
              .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
              .not_valid_before(now - datetime.timedelta(minutes=5))
              .not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
              .add_extension(x509.SubjectAlternativeName([x509.DNSName(SERVER_NAME)]), critical=False)
              .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
              .sign(ca_key, hashes.SHA256()))
    pem = serialization.Encoding.PEM
    private = serialization.PrivateFormat.PKCS8
    made = {
        "redis-password": secrets.token_urlsafe(32).encode(),
        "ca.pem": ca.public_bytes(pem),
        "ca.key": ca_key.private_bytes(pem, private, serialization.NoEncryption()),
        "server.pem": server.public_bytes(pem),
        "server.key": key.private_bytes(pem, private, serialization.NoEncryption()),
    }
    where.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(where, 0o700)
    for name, data in made.items():
        fd = os.open(where / name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if "pem" not in name else 0o644)
        with os.fdopen(fd, "wb") as out:
            out.write(data)
    return _read(where)
