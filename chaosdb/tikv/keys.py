"""User keys as PD sees region boundaries (TiKV's memcomparable key encoding, as client-go and PD use it).

* API V1 RawKV: the raw key itself.
* API V1 TxnKV (and TiDB): memcomparable ``EncodeBytes``: 8-byte groups, each followed by a marker
  ``0xFF - padding``, the last group padded with ``0x00`` (an exact multiple of 8 gets a full padding group).
* API V2: a mode byte (``r`` raw, ``x`` txn) and a 3-byte keyspace id before the key, then ``EncodeBytes``.

PD prints boundaries as upper-case hex; lookups send the encoded key as hex with ``?format=hex``.
"""

from __future__ import annotations

from chaosdb.core.errors import ChaosDBError

__all__ = ["encode_bytes", "decode_bytes", "encode_key", "key_bytes", "MODES"]

MODES = ("raw", "txn")
_GROUP = 8
_MARKER = 0xFF
_PAD = 0x00


def encode_bytes(key: bytes) -> bytes:
    """TiKV's memcomparable encoding of *key*: groups of 8 bytes, each padded and followed by its marker."""
    out = bytearray()
    for i in range(0, len(key) + 1, _GROUP):
        group = key[i:i + _GROUP]
        pad = _GROUP - len(group)
        out += group + bytes([_PAD]) * pad + bytes([_MARKER - pad])
    return bytes(out)


def decode_bytes(data: bytes) -> bytes:
    """The inverse of :func:`encode_bytes` (for reading region boundaries back)."""
    out = bytearray()
    for i in range(0, len(data), _GROUP + 1):
        chunk = data[i:i + _GROUP + 1]
        if len(chunk) != _GROUP + 1:
            raise ChaosDBError(f"not a memcomparable-encoded key: {data.hex().upper()}")
        pad = _MARKER - chunk[_GROUP]
        if pad < 0 or pad > _GROUP:
            raise ChaosDBError(f"bad group marker in encoded key: {data.hex().upper()}")
        out += chunk[:_GROUP - pad]
        if pad:
            return bytes(out)
    raise ChaosDBError(f"encoded key without a final group: {data.hex().upper()}")


def key_bytes(key: str | bytes, key_format: str = "utf8") -> bytes:
    """A user key given as text (``utf8``), ``hex`` or bytes."""
    if isinstance(key, bytes):
        return key
    if key_format == "hex":
        try:
            return bytes.fromhex(key)
        except ValueError:
            raise ChaosDBError(f"key {key!r} is not hex") from None
    if key_format != "utf8":
        raise ChaosDBError("key_format must be utf8 or hex")
    return key.encode()


def encode_key(key: str | bytes, mode: str = "raw", api_version: int = 1, keyspace_id: int = 0,
               key_format: str = "utf8") -> bytes:
    """The bytes PD keys regions by, for a user key of a RawKV or TxnKV client."""
    if mode not in MODES:
        raise ChaosDBError(f"mode must be raw or txn, got {mode!r}")
    if api_version not in (1, 2):
        raise ChaosDBError("api_version must be 1 or 2")
    raw = key_bytes(key, key_format)
    if api_version == 1:
        return raw if mode == "raw" else encode_bytes(raw)
    if not 0 <= keyspace_id < 1 << 24:
        raise ChaosDBError("keyspace_id must fit in 3 bytes")
    prefix = (b"r" if mode == "raw" else b"x") + keyspace_id.to_bytes(3, "big")
    return encode_bytes(prefix + raw)
