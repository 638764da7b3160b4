"""The benchmark harness of chapter 07 and ``benchmarks/`` (private: its API may change between releases).

    timing   devices, synchronisation, ``median_time`` and ``paired_speedups`` (torch.utils.benchmark)
    records  the JSON results as dataclasses, saved and loaded with their provenance; the recorded
             files travel with the package in ``mha_chapters/bench/results/``
    sweeps   the two sweeps of chapter 07 (batch size, sequence length) that produce the records

Import the submodules directly (``from mha_chapters.bench.timing import median_time``): ``sweeps`` uses the
chapter code in ``mha_chapters.batching``, so this package does not import it eagerly.
"""
