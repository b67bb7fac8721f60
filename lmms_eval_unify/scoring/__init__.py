"""The scoring core every benchmark shares (pure functions): the scorer wrapper between lmms-eval's
``process_results`` and a benchmark's per-sample score (``scorer``), answer extraction (``answers``), Score
arithmetic for roll-ups (``aggregate``), the aggregations task YAMLs name (``task_aggregations``), per-sample
records as feature arrays (``samples``) and seeded resampling (``resample``). Paper roll-ups live with their
benchmark (``benchmarks/<b>/paper.py``), tables and figures in ``reports/``."""
