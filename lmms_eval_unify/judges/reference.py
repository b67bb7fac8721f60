"""The reference judges behind one local endpoint: ``lmms-eval-unify judge serve`` (``commands/judge.py``).

Every benchmark with a judged task ships a ``reference_judge.py`` whose ``verdict(request)`` answers the
judge prompts of its own generated offline items the way a correct judge would, and answers anything else
without a JSON verdict. :func:`reference_verdict` asks each in registry order and returns the first JSON
verdict. It is NO substitute for a real judge: it exists so that a judged task can be tried offline on
generated data. Its model name, :data:`REFERENCE_JUDGE_MODEL`, is what the served samples record as their
judge, so every table and gallery page built from them says so (``reports.comparability``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable

from lmms_eval_unify.benchmarks import BENCHMARKS, has_part, part
from lmms_eval_unify.judges.config import REFERENCE_JUDGE_MODEL
from lmms_eval_unify.testing.openai_server import ChatRequest, OpenAICompatServer

NOT_JUDGED = "The reference judge does not recognise this prompt: it judges generated offline items only."


def reference_verdicts() -> list[Callable[[ChatRequest], str]]:
    """Each registered benchmark's reference ``verdict``, in registry order."""
    return [part(b, "reference_judge").verdict for b in BENCHMARKS if has_part(b, "reference_judge")]


def reference_verdict(request: ChatRequest) -> str:
    """The first benchmark reference judge's JSON verdict on the request, else a reply without one (the task
    records ``judge_invalid``)."""
    for verdict in reference_verdicts():
        reply = verdict(request)
        try:
            if isinstance(json.loads(reply), dict):
                return reply
        except ValueError:
            continue
    return NOT_JUDGED


def serve(port: int = 0, lifetime_s: float = 7 * 24 * 3600.0) -> OpenAICompatServer:
    """Start the reference judges on 127.0.0.1:`port` (0 = a free port); the caller stops the server."""
    return OpenAICompatServer(reference_verdict, max_lifetime_s=lifetime_s, port=port, record=False).start()


def exports(server: OpenAICompatServer) -> list[str]:
    """The shell lines that point lmms-eval-unify's judged tasks at a served reference judge."""
    return [
        f"export LMMS_EVAL_UNIFY_JUDGE_BASE_URL={server.base_url}",
        f"export LMMS_EVAL_UNIFY_JUDGE_MODEL={REFERENCE_JUDGE_MODEL}",
        "export LMMS_EVAL_UNIFY_JUDGE_API_KEY=none",
    ]


def serve_until_interrupted(port: int) -> int:
    """``lmms-eval-unify judge serve``: serve on ``port``, print what to export, stop on Ctrl-C."""
    server = serve(port)
    print("# reference judges (offline generated data only; tables will say so). In another shell:")
    print("\n".join(exports(server)), flush=True)
    try:
        while server.running:
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0
