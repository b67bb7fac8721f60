"""Backbones load once per config, also when lmms-eval's worker threads ask concurrently."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

from lmms_eval_unify.metrics import resolve_config
from lmms_eval_unify.metrics.registry import clear_backbones, get_backbone


def test_concurrent_requests_load_once():
    config = resolve_config("lpips", backbone="load-once-test", device="cpu")
    loads = []
    lock = threading.Lock()

    def load(cfg):
        with lock:
            loads.append(cfg)
        time.sleep(0.05)
        return object()

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda _: get_backbone(config, load), range(16)))
    assert len(loads) == 1 and all(r is results[0] for r in results)
    other = resolve_config("lpips", backbone="load-once-test", device="cpu", batch_size=3)
    assert get_backbone(other, load) is not results[0] and len(loads) == 2
    clear_backbones()
    get_backbone(config, load)
    assert len(loads) == 3
