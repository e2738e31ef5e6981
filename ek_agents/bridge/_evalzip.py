"""Read the members of an Inspect ``.eval`` log (a zip) without inspect_ai.

Since inspect_ai 0.3.206 the members are zstd-compressed (zip method 93), which the stdlib
``zipfile`` of Python < 3.14 cannot decompress; before that they were DEFLATE. Here the zip
directory comes from ``zipfile``, stored/DEFLATE members are read by it, and a zstd member's
raw bytes are cut out of the archive (after its local header) and decompressed with
``zstandard`` -- across frames, since inspect_ai splits large members into several -- then
checked against the member's CRC-32.
"""
from __future__ import annotations

import io
import struct
import zipfile
import zlib
from typing import IO

from ..errors import BridgeError, MissingDependency
from ..parsing import decompressed_cap, read_capped

__all__ = ["EvalZip", "ZSTD"]

ZSTD = 93  # the zip compression method number of Zstandard
_LOCAL_HEADER = struct.Struct("<4s2B4HL2L2H")  # zip local file header, 30 bytes
# what zipfile raises on a damaged archive (ValueError: a negative seek from a bad offset)
_ZIP_ERRORS = (zipfile.BadZipFile, NotImplementedError, zlib.error, EOFError, ValueError, OSError,
               struct.error)


class EvalZip:
    """The member names and bytes of one ``.eval`` archive (an open binary file object)."""

    def __init__(self, f: IO[bytes], name: str) -> None:
        self.name = name
        self._f = f
        try:
            self._zip = zipfile.ZipFile(f)
        except _ZIP_ERRORS as exc:  # a damaged directory: bad offsets, unknown versions, ...
            raise BridgeError(f"{name!r} is not a readable .eval log (bad zip: {exc})") from exc
        self.infos = {i.filename: i for i in self._zip.infolist()}

    def names(self) -> list[str]:
        return list(self.infos)

    def read(self, member: str) -> bytes:
        info = self.infos.get(member)
        if info is None:
            raise BridgeError(f"{self.name!r} has no member {member!r} (members: {sorted(self.infos)[:8]}...)")
        if info.flag_bits & 0x1:
            raise BridgeError(f"{self.name!r}: member {member!r} is encrypted; ek cannot read it")
        where = f"{self.name}:{member}"
        cap = decompressed_cap(info.compress_size)
        if info.file_size > cap:
            raise BridgeError(f"{where}: declares {info.file_size} bytes decompressed from "
                              f"{info.compress_size}, over the limit of {cap} bytes; a compression "
                              "bomb or a corrupt archive")
        if info.compress_type != ZSTD:
            try:
                with self._zip.open(info) as stream:
                    return read_capped(stream, cap, where=where, error=BridgeError)
            except BridgeError:
                raise
            except _ZIP_ERRORS as exc:
                raise BridgeError(f"{self.name!r}: cannot read member {member!r}: {exc}") from exc
        try:
            raw = self._raw(info)
        except (ValueError, OSError) as exc:  # a negative or impossible offset
            raise BridgeError(f"{self.name!r}: cannot read member {member!r}: {exc}") from exc
        data = _zstd_decompress(raw, where, cap)
        if zlib.crc32(data) & 0xFFFFFFFF != info.CRC:
            raise BridgeError(f"{self.name!r}: member {member!r} fails its CRC check (a corrupt log)")
        return data

    def _raw(self, info: zipfile.ZipInfo) -> bytes:
        self._f.seek(info.header_offset)
        header = self._f.read(_LOCAL_HEADER.size)
        if len(header) != _LOCAL_HEADER.size:
            raise BridgeError(f"{self.name!r}: truncated zip (member {info.filename!r})")
        fields = _LOCAL_HEADER.unpack(header)
        if fields[0] != b"PK\x03\x04":
            raise BridgeError(f"{self.name!r}: bad local header for member {info.filename!r}")
        name_len, extra_len = fields[-2], fields[-1]
        self._f.seek(info.header_offset + _LOCAL_HEADER.size + name_len + extra_len)
        raw = self._f.read(info.compress_size)
        if len(raw) != info.compress_size:
            raise BridgeError(f"{self.name!r}: truncated zip (member {info.filename!r})")
        return raw


def _zstd_decompress(raw: bytes, where: str, cap: int) -> bytes:
    try:
        import zstandard
    except ImportError as exc:  # pragma: no cover - zstandard is a runtime dependency
        raise MissingDependency("reading a zstd-compressed .eval log needs zstandard: "
                                "pip install zstandard") from exc
    try:
        reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(raw), read_across_frames=True)
        return read_capped(reader, cap, where=where, error=BridgeError)
    except zstandard.ZstdError as exc:
        raise BridgeError(f"{where}: not valid zstd data ({exc}); is the log corrupt?") from exc
