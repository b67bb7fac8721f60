"""Two gloo processes (as under `accelerate launch`): sharded results equal the single-process result."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
import torch

from lmms_eval_unify.metrics import fid, resolve_config

WORKER = textwrap.dedent(
    """
    import json, os, sys
    import torch
    import torch.distributed as dist
    import torch.multiprocessing as mp

    def images(count, seed):
        g = torch.Generator().manual_seed(seed)
        return [torch.randint(0, 256, (3, 32, 32), dtype=torch.uint8, generator=g) for _ in range(count)]

    def run(rank, port, out):
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
        from lmms_eval_unify.metrics import fid, resolve_config
        from lmms_eval_unify.metrics.distributed import gather_variable_length
        config = resolve_config("fid", backbone="tiny", weights="random", device="cpu")
        real, generated = images(7, 1), images(7, 2)
        shard = slice(0, 5) if rank == 0 else slice(5, 7)  # uneven shards, no padding
        official = fid(real[shard], generated[shard], config=config, distributed=True)
        standard = fid(real[shard], generated[shard], variant="standard", config=config, distributed=True)
        gathered = gather_variable_length(torch.arange(3.0) + 10 * rank if rank == 0 else torch.tensor([99.0]))
        if rank == 0:
            with open(out, "w") as f:
                json.dump({"official": official.per_sample.tolist(), "standard": standard.value,
                           "counts": [standard.num_real, standard.num_generated], "gathered": gathered.tolist()}, f)
        dist.destroy_process_group()

    if __name__ == "__main__":
        mp.spawn(run, args=(int(sys.argv[1]), sys.argv[2]), nprocs=2)
    """
)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.subprocess
def test_sharded_fid_equals_single_process(tmp_path, make_images):
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    out = tmp_path / "out.json"
    subprocess.run([sys.executable, str(script), str(_free_port()), str(out)], check=True, timeout=300)
    sharded = json.loads(out.read_text())

    config = resolve_config("fid", backbone="tiny", weights="random", device="cpu")
    real, generated = make_images(7, seed=1), make_images(7, seed=2)
    single_official = fid(real, generated, config=config).per_sample
    single_standard = fid(real, generated, variant="standard", config=config).value
    assert sharded["gathered"] == [0.0, 1.0, 2.0, 99.0]
    torch.testing.assert_close(torch.tensor(sharded["official"], dtype=torch.float64), single_official)
    assert sharded["counts"] == [7, 7]
    assert abs(sharded["standard"] - single_standard) <= 1e-9 * max(1.0, abs(single_standard))
