"""The daemon keeps only the newest events in memory; the store keeps them all, and describe shows them."""

from __future__ import annotations

from pathlib import Path

from .kit import job, running, wait_phase


def test_events_in_memory_are_bounded_and_describe_still_shows_all(tmp_path: Path) -> None:
    with running(tmp_path / "caldera") as cluster:
        cluster.state.EVENTS_IN_MEMORY = 5
        cluster.apply(job("many", ["sh", "-c", "echo hi"], replicas=6))
        wait_phase(cluster, "many", "Completed")
        stored = cluster.events("default")
        # Submitted, bound ×6, pod phases ×6, job phases...: far more than five.
        assert len(stored) > 15, stored
        cluster.get_job("default", "many")  # one more turn of the loop: whatever it recorded is written
        assert len(cluster.plane.events) <= 5
        described = cluster.describe_job("default", "many")["events"]
        assert [e["reason"] for e in described if e["kind"] == "PodPhase"] == ["Succeeded"] * 6
        assert len(described) == len([e for e in stored if e["object"].startswith("many")])
