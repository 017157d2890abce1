"""What the plots tell people: queue labels, and lines drawn under others named as such."""

from __future__ import annotations

import numpy as np

from caldera.sim.plots import queue_label, same_as


def test_a_trace_hex_id_reads_as_a_virtual_cluster() -> None:
    assert queue_label("6214e9") == "VC 6214e9"
    assert queue_label("research") == "research"
    assert queue_label("") == "-"


def test_a_line_equal_to_an_earlier_one_says_so() -> None:
    a, b = np.array([0.1, 0.5]), np.array([0.2, 0.5])
    labels = same_as([a, b, a.copy(), b.copy()], ["fifo", "las", "volcano", "srtf"])
    assert labels == ["fifo", "las", "volcano (= fifo)", "srtf (= las)"]


def test_series_of_different_lengths_are_not_the_same() -> None:
    assert same_as([np.array([1.0]), np.array([1.0, 1.0])], ["a", "b"]) == ["a", "b"]
