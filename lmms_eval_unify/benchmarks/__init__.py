"""Per-benchmark core code (data generation and preparation, answer spaces, scorers).

Each ``lmms_eval_unify.benchmarks.<name>.offline.data`` module provides ``generate(out_dir, n, seed) -> list[Path]``
(offline sets in the local-data layout) and, when the benchmark has published data to convert,
``prepare_main(argv) -> int`` (the ``lmms-eval-unify data prepare <name>`` command).
"""

BENCHMARKS = ("mme_unify", "unig2u", "uni_mmmu", "gapeval")
"""The four benchmarks, in the order the leaderboard prints them."""
