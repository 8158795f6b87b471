"""Kafka's default key partitioner (murmur2), so both buses place a key on the same partition."""

from __future__ import annotations

_SEED = 0x9747B28C
_M = 0x5BD1E995
_MASK = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """Return Kafka's murmur2 hash of ``data`` (signed 32-bit, as the Java client)."""
    length = len(data)
    h = (_SEED ^ length) & _MASK
    full = length - length % 4
    for i in range(0, full, 4):
        k = data[i] | (data[i + 1] << 8) | (data[i + 2] << 16) | (data[i + 3] << 24)
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = (h * _M) & _MASK
        h ^= k
    rest = length % 4
    if rest == 3:
        h ^= data[full + 2] << 16
    if rest >= 2:
        h ^= data[full + 1] << 8
    if rest >= 1:
        h ^= data[full]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for(key: bytes, partitions: int) -> int:
    """Return the partition of ``key`` among ``partitions`` (Kafka: ``toPositive(murmur2) % n``)."""
    return (murmur2(key) & 0x7FFFFFFF) % partitions
