"""PARL 2.x's ``parl.utils.machine_info``: this machine's address, GPUs and free ports.

Nothing here sends a packet: the IP address comes from the network interfaces (PARL opened a
UDP socket towards 8.8.8.8), and ports are probed by binding on 127.0.0.1.
"""

from __future__ import annotations

import importlib
import ipaddress
import os
import random
import socket
import subprocess

from parl.utils import logger
from parl.utils.utils import _HAS_PADDLE

import psutil

__all__ = [
    "get_free_tcp_port",
    "get_gpu_count",
    "get_ip_address",
    "get_port_from_range",
    "is_gpu_available",
    "is_port_available",
    "is_xpu_available",
]

LOOPBACK = "127.0.0.1"
NVIDIA_SMI_TIMEOUT_S = 10.0
MAX_PORT_PROBES = 1000
"""At most this many ports of a range are tried by :func:`get_port_from_range`."""


def get_ip_address() -> str:
    """This machine's IPv4 address on its first active non-loopback interface.

    Read from the interfaces themselves, without any network traffic. On a machine with only
    loopback (a laptop offline, a sandbox) it returns ``"127.0.0.1"`` and logs a warning
    (PARL returned None there).
    """
    stats = psutil.net_if_stats()
    for name, addresses in psutil.net_if_addrs().items():
        if name in stats and not stats[name].isup:
            continue
        for address in addresses:
            if address.family == socket.AF_INET and _routable(address.address):
                return str(address.address)
    logger.warning(
        "get_ip_address: no active network interface besides loopback, using %s (reachable "
        "from this machine only)",
        LOOPBACK,
    )
    return LOOPBACK


def _routable(address: str) -> bool:
    ip = ipaddress.ip_address(address)
    return not (ip.is_loopback or ip.is_link_local or ip.is_unspecified)


def get_gpu_count() -> int:
    """How many CUDA GPUs this process may use.

    ``CUDA_VISIBLE_DEVICES`` decides when set (empty or ``-1``: none); otherwise the GPUs that
    ``nvidia-smi -L`` lists (none when it is missing or fails).
    """
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return _count_visible(visible)
    try:
        listing = subprocess.run(
            ["nvidia-smi", "-L"],
            capture_output=True,
            text=True,
            check=True,
            timeout=NVIDIA_SMI_TIMEOUT_S,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        logger.info("no GPU found (nvidia-smi -L is not available); using the CPU")
        return 0
    count = sum(line.startswith("GPU ") for line in listing.splitlines())
    logger.info("nvidia-smi -L found %d GPU(s)", count)
    return count


def _count_visible(visible: str) -> int:
    count = 0
    for entry in filter(None, (part.strip() for part in visible.split(","))):
        if entry.lstrip("-").isdigit() and int(entry) < 0:
            break  # CUDA ignores this device and every one after it
        count += 1
    logger.info("CUDA_VISIBLE_DEVICES=%r gives %d GPU(s)", visible, count)
    return count


def is_gpu_available() -> bool:
    """Whether a GPU can be used: one is visible and, if paddle is installed, it has CUDA."""
    if get_gpu_count() == 0:
        return False
    if _HAS_PADDLE and not importlib.import_module("paddle").is_compiled_with_cuda():
        logger.warning("a GPU is visible but the installed paddle has no CUDA; using the CPU")
        return False
    return True


def is_xpu_available() -> bool:
    """Whether ``FLAGS_selected_xpus`` selects an XPU and the installed paddle supports XPU."""
    selected = os.environ.get("FLAGS_selected_xpus", "-1")  # noqa: SIM112 (paddle's name).split(",")[0].strip()
    if not selected.isdigit():
        return False
    if not _HAS_PADDLE or not importlib.import_module("paddle").is_compiled_with_xpu():
        logger.warning("FLAGS_selected_xpus is set but the installed paddle has no XPU support")
        return False
    return True


def get_free_tcp_port() -> str:
    """A TCP port that is free on 127.0.0.1 now, as a string (as PARL returned it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((LOOPBACK, 0))
        return str(probe.getsockname()[1])


def _check_port(name: str, port: int | str) -> int:
    try:
        number = int(port)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a port number, got {port!r}") from None
    if not 1 <= number <= 65535:
        raise ValueError(f"{name} must lie in [1, 65535], got {number}")
    return number


def is_port_available(port: int | str) -> bool:
    """Whether a server could listen on ``port`` at 127.0.0.1 now (found by binding, not dialling).

    Raises:
        TypeError, ValueError: if ``port`` is not a port number in [1, 65535].
    """
    number = _check_port("port", port)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((LOOPBACK, number))
        except OSError:
            return False
    return True


def get_port_from_range(start: int, end: int) -> int:
    """A free port in ``[start, end]``, tried in random order.

    Raises:
        ValueError: if the range is empty or outside [1, 65535].
        RuntimeError: if no port of the range (or of :data:`MAX_PORT_PROBES` tried) is free.
    """
    low, high = _check_port("start", start), _check_port("end", end)
    if low > high:
        raise ValueError(f"the port range [{start}, {end}] is empty; pass start <= end")
    candidates = range(low, high + 1)
    for port in random.sample(candidates, min(len(candidates), MAX_PORT_PROBES)):
        if is_port_available(port):
            return port
    raise RuntimeError(f"no free port found in [{start}, {end}]; choose another range")
