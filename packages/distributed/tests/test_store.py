"""The rendezvous stores: TCPStore (server and clients in threads), FileStore, HashStore,
PrefixStore."""

import threading
from datetime import timedelta

import pytest

import ember_distributed as dist


def _exercise(store, other):
    store.set("a", "1")
    assert other.get("a") == b"1"
    assert other.add("n", 2) == 2 and store.add("n", 3) == 5
    assert store.check(["a", "n"]) and not store.check(["zz"])
    assert store.compare_set("a", "1", "2") == b"2" and other.get("a") == b"2"
    assert store.compare_set("a", "1", "3") == b"2"
    got = []
    t = threading.Thread(target=lambda: got.append(other.get("late")))
    t.start()
    store.set("late", b"\x00\xffbytes")
    t.join(10)
    assert got == [b"\x00\xffbytes"]
    assert store.delete_key("late") and not store.delete_key("late")
    other.set_timeout(timedelta(seconds=0.3))
    with pytest.raises(dist.DistStoreError, match="timed out"):
        other.get("never")
    with pytest.raises(dist.DistStoreError, match="timed out"):
        other.wait(["never"])
    p = dist.PrefixStore("job", store)
    p.set("k", "v")
    assert store.get("job/k") == b"v" and dist.PrefixStore("job", other).get("k") == b"v"


def test_tcp_store():
    master = dist.TCPStore("127.0.0.1", 0, world_size=2, is_master=True, wait_for_workers=False)
    client = dist.TCPStore("127.0.0.1", master.port, world_size=2, wait_for_workers=False)
    try:
        _exercise(master, client)
        assert master.num_keys() >= 3
    finally:
        client.close()
        master.close()


def test_tcp_store_reports_a_missing_master():
    with pytest.raises(dist.DistNetworkError, match="could not connect"):
        dist.TCPStore("127.0.0.1", 1, timeout=timedelta(seconds=0.5), wait_for_workers=False)


def test_file_store(tmp_path):
    path = str(tmp_path / "store")
    _exercise(dist.FileStore(path, 2), dist.FileStore(path, 2))


def test_hash_store():
    s = dist.HashStore()
    _exercise(s, s)
