"""HDF5 files from anywhere, checked whole before any array is read.

An HDF5 file can make the library read more than its own bytes: external links and virtual
datasets map other files, external raw storage reads a dataset's bytes from any path (a FIFO
there blocks the reader), a filter id can load a plugin, and a chunked dataset whose chunks
were never written declares gigabytes it does not hold. :func:`checked_datasets` walks every
link of a file and refuses all of that, and bounds the bytes the file declares, before the
caller reads anything.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from parl.core.errors import DatasetError

if TYPE_CHECKING:
    import h5py

__all__ = ["checked_datasets"]

# HDF5's built-in filters and h5py's LZF: any other id would load a plugin from disk.
_BUILTIN_FILTERS = {1: "gzip", 2: "shuffle", 3: "fletcher32", 4: "szip", 6: "scaleoffset"}
_LZF = 32000
# deflate compresses at most ~1032:1; a file declaring more per stored byte holds fill values
# (chunks never written) or a compression bomb.
_MAX_RATIO = 1100
_MAX_DEPTH = 8
_MAX_OBJECTS = 1_000_000


def checked_datasets(file: h5py.File, where: str, max_bytes: int) -> dict[str, h5py.Dataset]:
    """Every dataset of ``file`` by path (``"episode_0/rewards"``), after checking them all.

    Raises:
        DatasetError: the file has an external or soft link, a virtual dataset, external raw
            storage, a filter that is not built in, groups nested deeper than 8 or more than a
            million objects, a dataset that declares more bytes than it stores (beyond what
            compression allows), or declares more than ``max_bytes`` in all.
    """
    import h5py

    found: dict[str, h5py.Dataset] = {}
    stack: list[tuple[h5py.Group, str, int]] = [(file, "", 0)]
    declared = 0
    while stack:
        group, prefix, depth = stack.pop()
        if depth > _MAX_DEPTH or len(found) + len(stack) > _MAX_OBJECTS:
            raise DatasetError(f"{where}: groups nest deeper than {_MAX_DEPTH} or hold too much")
        for name in group:
            path = prefix + name
            link = group.get(name, getlink=True)
            if not isinstance(link, h5py.HardLink):
                raise DatasetError(
                    f"{where}: {path!r} is a {type(link).__name__}: a link to other files or "
                    "objects; a dataset file must hold its arrays itself"
                )
            item = group[name]
            if isinstance(item, h5py.Group):
                stack.append((item, path + "/", depth + 1))
            elif isinstance(item, h5py.Dataset):
                declared += _checked_dataset(item, path, where)
                found[path] = item
    if declared > max_bytes:
        raise DatasetError(
            f"{where} declares {declared} bytes of arrays, over max_bytes={max_bytes}; pass a "
            "larger max_bytes if you trust the file and have the memory"
        )
    return found


def _checked_dataset(dataset: h5py.Dataset, path: str, where: str) -> int:
    """Check one dataset's storage; return the bytes it declares."""
    plist = dataset.id.get_create_plist()
    if dataset.is_virtual:
        raise DatasetError(f"{where}: {path!r} is a virtual dataset, which maps other files")
    if plist.get_external_count():
        raise DatasetError(
            f"{where}: {path!r} keeps its bytes in external files; a dataset file must hold "
            "its arrays itself"
        )
    filters = [plist.get_filter(i)[0] for i in range(plist.get_nfilters())]
    unknown = [f for f in filters if f not in _BUILTIN_FILTERS and f != _LZF]
    if unknown:
        raise DatasetError(
            f"{where}: {path!r} needs HDF5 filter(s) {unknown}, which are not built in "
            "(reading would load a plugin); write it with gzip or without compression"
        )
    if dataset.dtype.kind in "OV" or dataset.dtype.itemsize == 0:  # variable-length: unbounded
        return 0
    declared = int(dataset.size) * dataset.dtype.itemsize
    stored = dataset.id.get_storage_size()
    enough = stored * _MAX_RATIO >= declared if filters else stored >= declared
    if declared and not enough:
        raise DatasetError(
            f"{where}: {path!r} declares {declared} bytes but stores {stored}: its chunks were "
            "never written, or it is a compression bomb; the file is damaged or crafted"
        )
    return declared
