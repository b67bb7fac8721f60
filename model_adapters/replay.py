"""``unify_replay``: answers every request with the response an earlier run saved (``lmms-eval-unify score``).

It generates nothing. Records of our models point at images under the earlier run's media folder; when the
run folder was moved, a record's root is found again under the run's media folders by its configuration folder's
name. Only the run's media folders (``saved_media_roots``: ``unify_media`` beside the results folder or one level
up, a ``media`` folder given explicitly) are trusted by the scorers.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from pathlib import Path
from typing import Any

from lmms_eval.api.instance import Instance
from lmms_eval.api.model import lmms
from loguru import logger

from lmms_eval_unify.adapter import (
    SCHEMA,
    UnifiedOutput,
    clean_text,
    generation_arguments,
    run_status,
    saved_media_roots,
    saved_responses,
    trust_media_root,
)


class UnifyReplay(lmms):
    """Serves saved responses of ``results_file``'s samples files, keyed by task and doc id."""

    is_simple = True

    def __init__(
        self,
        results_file: str,
        media: str = "",
        model_name: str = "",
        **kwargs: Any,
    ) -> None:
        super().__init__()
        self.results_file = Path(results_file).resolve()
        self.responses = saved_responses(self.results_file)
        self.served: dict[tuple[str, int], int] = defaultdict(int)
        self.trusted = saved_media_roots([self.results_file.parent], [p for p in media.split(os.pathsep) if p])
        for root in self.trusted:
            trust_media_root(root)
        self._roots: dict[str, str] = {}
        logger.info(
            "unify_replay: {} saved responses of {} from {}",
            sum(len(v) for v in self.responses.values()),
            model_name or "the run",
            self.results_file,
        )

    def generate_until(self, requests: list[Instance]) -> list[str]:
        out = [self._replay(request) for request in requests]
        missing = sum(1 for text in out if '"error": "no saved output' in text)
        logger.info("unify_replay: {} of {} requests served from saved records", len(out) - missing, len(out))
        run_status.status().count_resumed(len(out) - missing)
        return out

    def generate_visual_cot(self, requests: list[Instance]) -> list[str]:
        return self.generate_until(requests)

    def _replay(self, request: Instance) -> str:
        _, _, _, doc_id, task, _ = generation_arguments(request)
        key = (task, int(doc_id))
        saved = self.responses.get(key, [])
        index = self.served[key]
        self.served[key] += 1
        if index >= len(saved):
            record = UnifiedOutput("replay", error=f"no saved output for {task}/{doc_id} in {self.results_file}")
            return record.to_json()
        return clean_text(self._rerooted(saved[index]))

    def _rerooted(self, text: str) -> str:
        """The saved response with its media root moved under the run folder when it lies elsewhere."""
        try:
            data = json.loads(text)
        except (ValueError, RecursionError):  # left for parse_output to record as malformed
            return text
        if not isinstance(data, dict) or data.get("schema") != SCHEMA or not isinstance(data.get("root"), str):
            return text
        data["root"] = self._root_in_run(data["root"])
        return json.dumps(data, ensure_ascii=False)

    def _root_in_run(self, root: str) -> str:
        if root not in self._roots:
            resolved = Path(root).resolve() if root else None
            if resolved and any(resolved.is_relative_to(t) for t in self.trusted) and resolved.is_dir():
                self._roots[root] = str(resolved)
            else:
                name = Path(root).name
                found = next((p for t in self.trusted for p in t.rglob(name) if p.is_dir()), None) if name else None
                self._roots[root] = str(found) if found else root
                if found:
                    logger.info("unify_replay: media root {} found at {}", root, found)
        return self._roots[root]

    def loglikelihood(self, requests: list[Instance]) -> list[tuple[float, bool]]:
        raise NotImplementedError("unify_replay serves generated outputs only")

    def generate_until_multi_round(self, requests: list[Instance]) -> list[str]:
        raise NotImplementedError("unify_replay serves generated outputs only")
