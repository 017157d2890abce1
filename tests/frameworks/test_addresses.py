"""The addresses seam: DNS names on Kubernetes, one host and mapped ports on the embedded cluster."""

from __future__ import annotations

import pytest

from caldera.core.addresses import Addresses, DnsAddresses, MappedAddresses, UnmappedPortError
from caldera.core.errors import CalderaError


def test_dns_addresses_are_volcano_service_names() -> None:
    addresses: Addresses = DnsAddresses("mnist")
    assert addresses.host("mnist-worker-1") == "mnist-worker-1.mnist"
    assert addresses.port("mnist-worker-1", 23456) == 23456


def test_mapped_addresses_share_a_host_and_map_each_pod_port() -> None:
    addresses: Addresses = MappedAddresses("127.0.0.1", {("a-w-0", 80): 41000, ("a-w-1", 80): 41001})
    assert addresses.host("a-w-0") == addresses.host("a-w-1") == "127.0.0.1"
    assert (addresses.port("a-w-0", 80), addresses.port("a-w-1", 80)) == (41000, 41001)


def test_an_unmapped_port_names_the_pod_and_the_port() -> None:
    addresses = MappedAddresses("127.0.0.1", {("a-w-0", 80): 41000})
    with pytest.raises(UnmappedPortError, match="container port 81 of pod a-w-0") as info:
        addresses.port("a-w-0", 81)
    assert isinstance(info.value, CalderaError)
    assert isinstance(info.value, LookupError)
    assert not isinstance(info.value, KeyError)  # a KeyError would print as a quoted repr


def test_mapped_addresses_are_values() -> None:
    one = MappedAddresses("127.0.0.1", {("p", 1): 2})
    assert one == MappedAddresses("127.0.0.1", {("p", 1): 2})
    assert one != MappedAddresses("127.0.0.1", {("p", 1): 3})
    assert hash(one) == hash(MappedAddresses("127.0.0.1", {("p", 1): 2}))
    assert "127.0.0.1" in repr(one)
