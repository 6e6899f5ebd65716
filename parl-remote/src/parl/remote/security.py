"""The cluster secret and how every xparl socket proves it holds it.

A cluster has one secret (a random string kept in its owner-only record; other machines get it
through ``--secret-file`` or ``PARL_CLUSTER_SECRET``). The secret itself never travels:

- **Control sockets** (master, worker) use CURVE. Both key pairs, the servers' and the members',
  are derived from the secret with HMAC-SHA256, and the ZAP handler admits only the members'
  public key. So a peer without the secret cannot complete a handshake, and a member never
  talks to an impostor that took over a freed port (it could not prove the server key).
- **Actor sockets** (client → job) carry the large payloads. By default (``auth``) they use PLAIN
  with a password derived from the secret *and the job's id*: authentication at handshake cost
  only, no per-byte cost. The password crosses loopback in clear, but it opens only that one
  job (which exists once), so a process that grabbed a freed port learns nothing reusable.
  The job then proves itself to the client (an HMAC of a fresh nonce) before the client sends
  it anything or unpickles anything from it. With ``encrypt`` (forced
  when a process binds beyond loopback) they use CURVE as well.
- ``insecure`` uses no mechanism at all and refuses to bind beyond loopback.
"""

from __future__ import annotations

import enum
import hashlib
import hmac
import ipaddress
import os
import secrets
import stat
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import zmq
from zmq.utils import z85

__all__ = [
    "SECRET_ENV",
    "Mode",
    "Security",
    "is_loopback",
    "new_secret",
    "read_secret_file",
]

SECRET_ENV = "PARL_CLUSTER_SECRET"
MIN_SECRET_CHARS = 16
CONTROL_DOMAIN = "xparl"
_USER = b"xparl"
_LABEL = b"xparl-v1|"


class Mode(str, enum.Enum):
    """How a cluster's sockets authenticate (and encrypt)."""

    INSECURE = "insecure"
    AUTH = "auth"
    ENCRYPT = "encrypt"


def new_secret() -> str:
    """A fresh random cluster secret (64 hex digits)."""
    return secrets.token_hex(32)


def check_secret(text: str, where: str) -> str:
    """Return the stripped secret, or raise ValueError naming ``where`` it came from."""
    value = text.strip()
    if len(value) < MIN_SECRET_CHARS or any(c.isspace() for c in value):
        raise ValueError(
            f"the cluster secret from {where} must be at least {MIN_SECRET_CHARS} characters "
            "without spaces; copy the `secret` file from the folder `xparl start` printed, or "
            'make one with `python -c "import secrets; print(secrets.token_hex(32))"`'
        )
    return value


def read_secret_file(path: str | os.PathLike[str]) -> str:
    """Read a secret file, refusing one that other accounts can read (like ssh does)."""
    file = Path(path).expanduser()
    try:
        mode = file.stat().st_mode
    except FileNotFoundError:
        raise ValueError(f"secret file {file} does not exist") from None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise ValueError(
            f"secret file {file} is readable by other accounts "
            f"(mode {stat.filemode(mode)}); run `chmod 600 {file}`"
        )
    return check_secret(file.read_text(), f"the file {file}")


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses; any other host counts as the network."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _z85_pair(seed: bytes) -> tuple[bytes, bytes]:
    secret_key = z85.encode(seed)
    return zmq.curve_public(secret_key), secret_key


@dataclass(frozen=True)
class Security:
    """What one process uses to secure its sockets.

    Attributes:
        secret: The cluster secret; None for an insecure (NULL) cluster.
        encrypt: Encrypt actor sockets too (CURVE) instead of authenticating them only (PLAIN).
    """

    secret: str | None
    encrypt: bool = False

    @classmethod
    def for_mode(cls, mode: Mode, secret: str | None) -> Security:
        """The security of a cluster running in ``mode`` with ``secret``."""
        if mode is Mode.INSECURE:
            return cls(None)
        if secret is None:
            raise ValueError(f"a cluster in {mode.value!r} mode needs a secret")
        return cls(secret, encrypt=mode is Mode.ENCRYPT)

    @property
    def mode(self) -> Mode:
        if self.secret is None:
            return Mode.INSECURE
        return Mode.ENCRYPT if self.encrypt else Mode.AUTH

    def binding(self, host: str) -> Security:
        """This security for sockets bound on ``host``: beyond loopback, always encrypted.

        Raises:
            ValueError: an insecure process asked to bind beyond loopback.
        """
        if is_loopback(host):
            return self
        if self.secret is None:
            raise ValueError(
                f"an --insecure cluster binds loopback only, not {host!r}: drop --insecure "
                "(the cluster then authenticates and encrypts every connection) or bind "
                "127.0.0.1"
            )
        return Security(self.secret, encrypt=True)

    @property
    def job_mechanism(self) -> str:
        """The mechanism of actor sockets: ``null``, ``plain`` or ``curve``."""
        return self.mode_mechanism(self.mode)

    @staticmethod
    def mode_mechanism(mode: Mode) -> str:
        return {Mode.INSECURE: "null", Mode.AUTH: "plain", Mode.ENCRYPT: "curve"}[mode]

    # ------------------------------------------------------------------ derived material
    def _derive(self, label: bytes) -> bytes:
        assert self.secret is not None
        return hmac.new(self.secret.encode(), _LABEL + label, hashlib.sha256).digest()

    @cached_property
    def _server_keys(self) -> tuple[bytes, bytes]:
        return _z85_pair(self._derive(b"curve-server"))

    @cached_property
    def _member_keys(self) -> tuple[bytes, bytes]:
        return _z85_pair(self._derive(b"curve-member"))

    def job_password(self, job_id: str) -> bytes:
        """The PLAIN password of one job's socket (useless for any other job)."""
        return self._derive(b"job-password|" + job_id.encode()).hex().encode()

    def job_proof(self, job_id: str, nonce: bytes) -> bytes:
        """What a job answers to a client's nonce to prove it belongs to the cluster."""
        if self.secret is None:
            return b""
        return self._derive(b"job-proof|" + job_id.encode() + b"|" + nonce)

    def check_job_proof(self, job_id: str, nonce: bytes, proof: bytes) -> bool:
        return self.secret is None or hmac.compare_digest(self.job_proof(job_id, nonce), proof)

    def is_member_key(self, key: bytes) -> bool:
        return hmac.compare_digest(key, self._member_keys[0])

    # ------------------------------------------------------------------ sockets
    def serve_control(self, sock: zmq.Socket) -> None:
        """Make a bound control socket (master, worker) admit cluster members only."""
        if self.secret is not None:
            self._curve_server(sock, CONTROL_DOMAIN)

    def dial_control(self, sock: zmq.Socket) -> None:
        """Make a connecting socket prove membership to a master or worker."""
        if self.secret is not None:
            self._curve_client(sock)

    def serve_job(self, sock: zmq.Socket, job_id: str) -> None:
        """Secure a job's socket: PLAIN with the job's password, or CURVE when encrypting."""
        if self.secret is None:
            return
        if self.encrypt:
            self._curve_server(sock, _job_domain(job_id))
        else:
            sock.plain_server = True
            sock.zap_domain = _job_domain(job_id).encode()

    def dial_job(self, sock: zmq.Socket, job_id: str, mechanism: str) -> None:
        """Configure a client's socket for a job that announced ``mechanism``."""
        if mechanism == "null":
            if self.secret is not None:
                raise ValueError(
                    f"job {job_id} runs without authentication while this client has a cluster "
                    "secret; the cluster's workers must share the master's secret and mode"
                )
            return
        if self.secret is None:
            raise ValueError(
                f"job {job_id} requires the cluster secret, which this client lacks; set "
                f"{SECRET_ENV} or pass secret_file= to parl.connect"
            )
        if mechanism == "curve":
            self._curve_client(sock)
        elif mechanism == "plain":
            sock.plain_username = _USER
            sock.plain_password = self.job_password(job_id)
        else:
            raise ValueError(f"job {job_id} announced an unknown security mechanism {mechanism!r}")

    def _curve_server(self, sock: zmq.Socket, domain: str) -> None:
        public, secret = self._server_keys
        sock.curve_server = True
        sock.curve_publickey = public
        sock.curve_secretkey = secret
        sock.zap_domain = domain.encode()

    def _curve_client(self, sock: zmq.Socket) -> None:
        public, secret = self._member_keys
        sock.curve_serverkey = self._server_keys[0]
        sock.curve_publickey = public
        sock.curve_secretkey = secret

    def start_gatekeeper(self, context: zmq.Context, job_id: str | None = None) -> Any:
        """Start the ZAP handler that checks every incoming handshake of ``context``.

        It must run before any socket of the context binds: without a ZAP handler, libzmq
        lets any CURVE or PLAIN client in. Insecure processes get None.
        """
        if self.secret is None:
            return None
        from parl.remote.gatekeeper import Gatekeeper  # imports asyncio: servers only

        keeper = Gatekeeper(context)
        keeper.start()
        keeper.configure_curve_callback(CONTROL_DOMAIN, _MemberKeys(self, keeper))
        if job_id is not None:
            domain = _job_domain(job_id)
            if self.encrypt:
                keeper.configure_curve_callback(domain, _MemberKeys(self, keeper))
            else:
                keeper.configure_plain(domain, {"xparl": self.job_password(job_id).decode()})
        return keeper


def _job_domain(job_id: str) -> str:
    return f"job:{job_id}"


class _MemberKeys:
    """ZAP credentials provider: admits the members' CURVE key only (denials counted by the
    gatekeeper)."""

    def __init__(self, security: Security, keeper: Any) -> None:
        self.security = security
        self.keeper = keeper

    def callback(self, domain: str, key: bytes) -> bool:
        return bool(self.keeper.judge(self.security.is_member_key(key)))
