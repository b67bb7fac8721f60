"""The released Uni-MMMU evaluator's maze and sliding rules, reproduced for the ``*_official`` tasks.

``Vchitect/Uni-MMMU:eval_ummmu.py`` reads boards with ``parse_maze_image`` / ``parse_sliding_puzzle_image``.
Our default parser (``MazeDomain.parse_grid`` / ``SlidingDomain.parse_grid``) applies the same colour rules
but also reads boards the released one cannot. The released parser, reproduced here including its failures:

- crops the first/last row and column whose content share exceeds the threshold (the whole image when none
  does), widens that box by a 2-pixel margin, then squares it; the maze crop clamps rows by the image *width*
  and columns by the *height* (a landscape or portrait page can yield a shifted, cut or empty board);
- does not shrink large images first; cell edges are ``round(i * side / n)``; an empty cell is ``"?"``;
- maze floor cells are ``" "`` (ours ``"."``), the start is the *last* cell over the start threshold.

Scoring differences (see docs/fidelity/uni_mmmu.md): the maze reference boards are the released parse of the
initial image replayed with the lower-cased true moves, and a case whose initial image has no start is
skipped; the sliding reference boards are the dataset's step images, parsed, and its true move names are
compared without lower-casing.

Every pixel rule depends on the pixel's colour only, so each distinct colour is decided once, with the released
arithmetic, in a board reader's per-colour table (``puzzles/board.py``); ``tests/released_reference.py`` keeps
the per-pixel computation, which the tests and ``bench/puzzle_scorer_cost.py`` check this against bit for bit.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from PIL import Image

from lmms_eval_unify.output.record import OutputFailure, parse_output
from lmms_eval_unify.puzzles import maze, sliding
from lmms_eval_unify.puzzles.board import BoardReader, colour_keys, palette_distances
from lmms_eval_unify.puzzles.domain import OFFSETS, Grid
from lmms_eval_unify.puzzles.scoring import METRICS, moves_from_answer

MARGIN_PX = 2
MAZE_SIZE, MAZE_TOLERANCE, MAZE_FALLBACK_START, MAZE_FALLBACK_GOAL = 6, 0.75, 0.08, 0.25
SLIDING_SIZE, SLIDING_TOLERANCE = 3, 0.80
FLOOR, WALL, START, GOAL, BOTH, UNKNOWN = " ", "#", "S", "G", "SG", "?"


class WhitePageReader(BoardReader):
    """The released sliding parser's colour decisions: its page distance is the float64 distance to white
    (``np.linalg.norm(pixels - np.ones(3))``), not a float32 palette distance as in :class:`BoardReader`."""

    def is_board(self, rgb: np.ndarray) -> np.ndarray:
        d_content = palette_distances(rgb, self.content).min(axis=-1)
        return d_content + 0.01 < np.linalg.norm(rgb - np.ones(3), axis=-1)


MAZE_READER = maze.READER
"""The released maze parser's colours (board: wall/start/goal/path vs white/floor; labels floor/wall/start/goal
with margin 0.01) are those of our maze reader, so both share its per-colour table."""
SLIDING_READER = WhitePageReader(
    content=sliding.PALETTE, background=[sliding.WHITE], labels=sliding.PALETTE, min_fraction=0.002
)
"""The released sliding parser's colours (its own 16 MiB table, allocated on first use)."""


def released_codes(image: Image.Image, reader: BoardReader) -> np.ndarray:
    """``2 * nearest label + is_board`` (H, W) uint8 of every pixel at full resolution, through the reader's
    per-colour table: the same float32 decisions as the released per-pixel computation."""
    return reader.codes(colour_keys(image if image.mode == "RGB" else image.convert("RGB")))


def released_crop_box(is_board: np.ndarray, min_fraction: float, swap_clamp: bool) -> tuple[int, int, int, int]:
    """(top, left, bottom, right) of the released board crop of a board mask (H, W); slice
    ``codes[top:bottom, left:right]``.

    ``swap_clamp`` reproduces the maze parser, which clamps the rows by the width and the columns by the
    height. The values may be negative (Python slicing then counts from the end, as in the released code).
    """
    height, width = is_board.shape
    with np.errstate(invalid="ignore"):  # an empty image: no row or column share (0 / 0) exceeds the threshold
        rows = np.flatnonzero(is_board.sum(axis=1) / width > min_fraction)
        cols = np.flatnonzero(is_board.sum(axis=0) / height > min_fraction)
    top, bottom = (int(rows[0]), int(rows[-1])) if rows.size else (0, height - 1)
    left, right = (int(cols[0]), int(cols[-1])) if cols.size else (0, width - 1)
    top, left = max(0, top - MARGIN_PX), max(0, left - MARGIN_PX)
    bottom, right = min(height - 1, bottom + MARGIN_PX), min(width - 1, right + MARGIN_PX)
    side = max(bottom - top + 1, right - left + 1)
    centre_row, centre_col, half = (top + bottom) // 2, (left + right) // 2, side // 2
    row_limit, col_limit = (width, height) if swap_clamp else (height, width)
    top = max(0, centre_row - half)
    bottom = min(row_limit, top + side)
    left = max(0, centre_col - half)
    right = min(col_limit, left + side)
    return bottom - side, right - side, bottom, right


def released_board(image: Image.Image, reader: BoardReader, min_fraction: float, swap_clamp: bool) -> np.ndarray:
    """Nearest-label index (H', W', uint8) of every pixel of the released crop of ``image``."""
    codes = released_codes(image, reader)
    top, left, bottom, right = released_crop_box((codes & 1) == 1, min_fraction, swap_clamp)
    return codes[top:bottom, left:right] >> 1


def cell_edges(length: int, n: int) -> np.ndarray:
    """The released cell edges ``round(i * length / n)``, i = 0..n (Python's round: half to even)."""
    return np.array([int(round(i * (length / n))) for i in range(n + 1)])


def cell_shares(labels: np.ndarray, k: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-cell label shares (n, n, k) as float32, the released ``(tile == label).mean()`` cast to float32,
    and which cells hold pixels (n, n); an empty cell's shares are 0."""
    height, width = labels.shape
    rows, cols = cell_edges(height, n), cell_edges(width, n)
    sizes = np.diff(rows)[:, None] * np.diff(cols)[None, :] if labels.size else np.zeros((n, n), dtype=int)
    row_cell = np.searchsorted(rows, np.arange(height), side="right") - 1
    col_cell = np.searchsorted(cols, np.arange(width), side="right") - 1
    dtype = np.min_scalar_type(n * n * k)  # uint8 for both puzzles: the per-pixel bins stay narrow
    bins = (row_cell * (n * k)).astype(dtype)[:, None] + (col_cell * k).astype(dtype) + labels
    counts = np.bincount(bins.ravel(), minlength=n * n * k).reshape(n, n, k)
    present = sizes > 0
    shares = np.zeros((n, n, k), dtype=np.float32)
    shares[present] = (counts[present] / sizes[present][:, None]).astype(np.float32)
    return shares, present


@dataclass(frozen=True)
class ReleasedMaze:
    """What ``parse_maze_image`` returns: the grid (floor ``" "``), the start and the goal (or ``None``)."""

    grid: Grid
    start: tuple[int, int] | None
    goal: tuple[int, int] | None


def released_maze_box(image: Image.Image) -> tuple[int, int, int, int]:
    """(top, left, bottom, right) of the released maze crop, its swapped height/width clamp included."""
    return released_crop_box((released_codes(image, MAZE_READER) & 1) == 1, 0.003, swap_clamp=True)


def released_maze_parse(image: Image.Image) -> ReleasedMaze:
    """The released maze parser (tolerance 0.75, start 0.25x, goal 0.75x, fallbacks 0.08 / 0.25)."""
    labels = released_board(image, MAZE_READER, 0.003, swap_clamp=True)
    fractions, present = cell_shares(labels, 4, MAZE_SIZE)
    tol = MAZE_TOLERANCE
    grid = [[UNKNOWN] * MAZE_SIZE for _ in range(MAZE_SIZE)]
    start = goal = None
    for r in range(MAZE_SIZE):
        for c in range(MAZE_SIZE):
            if not present[r, c]:
                continue
            floor, wall, start_share, goal_share = fractions[r, c]
            is_start, is_goal = start_share >= tol * 0.25, goal_share >= tol * 0.75
            if is_start:
                start = (r, c)
            if is_goal:
                goal = (r, c)
            grid[r][c] = (
                BOTH if is_start and is_goal else START if is_start else GOAL if is_goal
                else WALL if wall >= tol else FLOOR if floor >= tol else UNKNOWN
            )  # fmt: skip
    if start is None:
        best = np.unravel_index(np.argmax(fractions[..., 2]), (MAZE_SIZE, MAZE_SIZE))
        if fractions[best[0], best[1], 2] >= MAZE_FALLBACK_START:
            start = (int(best[0]), int(best[1]))
            grid[start[0]][start[1]] = START
    if goal is None:
        best = np.unravel_index(np.argmax(fractions[..., 3]), (MAZE_SIZE, MAZE_SIZE))
        if fractions[best[0], best[1], 3] >= MAZE_FALLBACK_GOAL:
            goal = (int(best[0]), int(best[1]))
            grid[goal[0]][goal[1]] = BOTH if grid[goal[0]][goal[1]] == START else GOAL
    if start is not None and start == goal:
        grid[start[0]][start[1]] = BOTH
    return ReleasedMaze(tuple(tuple(row) for row in grid), start, goal)


def released_sliding_grid(image: Image.Image) -> Grid:
    """The released sliding parser: labels ``"1"``..``"9"`` (Set1 order), ``"?"`` under 80 % majority."""
    labels = released_board(image, SLIDING_READER, 0.002, swap_clamp=False)
    shares, present = cell_shares(labels, len(sliding.PALETTE), SLIDING_SIZE)
    grid = []
    for r in range(SLIDING_SIZE):
        tokens = []
        for c in range(SLIDING_SIZE):
            best = int(shares[r, c].argmax()) if present[r, c] else None
            tokens.append(UNKNOWN if best is None or float(shares[r, c, best]) < SLIDING_TOLERANCE else str(best + 1))
        grid.append(tuple(tokens))
    return tuple(grid)


def released_maze_references(initial: ReleasedMaze, truth: Sequence[str]) -> list[Grid]:
    """Reference boards: walls of the parsed initial board, the start replayed (blocked move = stay)."""
    walls = [[token == WALL for token in row] for row in initial.grid]
    row, col = initial.start or (0, 0)
    boards = []
    for move in truth:
        dr, dc = OFFSETS.get(move, (0, 0))
        if 0 <= row + dr < MAZE_SIZE and 0 <= col + dc < MAZE_SIZE and not walls[row + dr][col + dc]:
            row, col = row + dr, col + dc
        grid = [[WALL if wall else FLOOR for wall in line] for line in walls]
        if initial.goal is not None:
            grid[initial.goal[0]][initial.goal[1]] = GOAL
        grid[row][col] = BOTH if (row, col) == initial.goal else START
        boards.append(tuple(tuple(line) for line in grid))
    return boards


def released_text_scores(predicted: list[str] | None, truth: Sequence[Any]) -> tuple[float, float]:
    """(exact, frame accuracy) of ``_evaluate_text_moves``: no truth scores 0; zip over the truth."""
    predicted = predicted or []
    if not truth:
        return 0.0, 0.0
    hits = sum(p == t for p, t in zip(predicted, truth, strict=False))
    return float(list(predicted) == list(truth)), hits / len(truth)


def released_image_scores(
    predicted: Sequence[Grid], truth: Sequence[Grid], empty_truth_credit: bool
) -> tuple[float, float]:
    """(exact, frame accuracy) of the released image rules. An empty truth scores 0 for the maze and, for the
    sliding puzzle (``empty_truth_credit``), 1 iff nothing was predicted."""
    if not truth:
        credit = float(empty_truth_credit and not predicted)
        return credit, credit
    hits = sum(p == t for p, t in zip(predicted, truth, strict=False))
    return float(len(predicted) == len(truth) and hits == len(truth)), hits / len(truth)


def maze_image_scores(
    initial: Image.Image, truth: Sequence[str], images: Sequence[Image.Image]
) -> tuple[float, float] | None:
    """Released maze (img exact, img frame accuracy); ``None`` when the released evaluator skips the case."""
    parsed_initial = released_maze_parse(initial)
    if parsed_initial.start is None:
        return None
    references = released_maze_references(parsed_initial, [str(m).lower() for m in truth])
    return released_image_scores([released_maze_parse(i).grid for i in images], references, False)


def sliding_image_scores(step_images: Sequence[Image.Image], images: Sequence[Image.Image]) -> tuple[float, float]:
    """Released sliding (img exact, img frame accuracy): outputs vs the parsed step images of the data."""
    references = [released_sliding_grid(image) for image in step_images]
    return released_image_scores([released_sliding_grid(i) for i in images], references, True)


def _raw_moves(value: str | Sequence[Any]) -> list[Any]:
    """True moves as stored (a JSON string in the published parquet, or a list), not normalised."""
    return list(json.loads(value) if isinstance(value, str) else value)


def score_released(
    puzzle: str,
    doc: dict,
    raw_output: str,
    initial_image: Image.Image,
    step_images: Sequence[Image.Image] | None = None,
) -> dict:
    """Per-sample metrics of one maze/sliding output under the released evaluator's rules; never raises.

    Maze: truth = ``steps_long`` (``steps`` when absent) lower-cased, references replayed from
    ``initial_image``. Sliding: truth = ``steps_words`` as stored, references = the parsed ``step_images``
    (the data's step images after the initial one; ``None`` = the data has none: image metrics ``None``).
    """
    truth = _raw_moves(doc.get("steps_long") or doc["steps"]) if puzzle == "maze" else _raw_moves(doc["steps_words"])
    if puzzle == "maze":
        truth = [str(m).lower() for m in truth]
    parsed = parse_output(raw_output)
    if parsed.unsupported:
        return {m: None for m in METRICS} | {
            "invalid_outputs": "",
            "details": {"unsupported": parsed.record.unsupported},
        }
    result: dict[str, Any] = {m: 0.0 for m in METRICS} | {"invalid_outputs": ""}
    if parsed.failure:
        return result | {
            "invalid_outputs": parsed.failure.reason,
            "details": {"failure": parsed.failure.detail},
        }
    predicted = moves_from_answer(parsed.text)
    details: dict[str, Any] = {"variant": "official", "predicted_moves": predicted, "truth_moves": truth}
    result["text_sample_acc"], result["text_step_acc"] = released_text_scores(predicted, truth)
    images = parsed.load_images()
    if isinstance(images, OutputFailure):
        result["invalid_outputs"] = images.reason
        details["image_failure"] = images.detail
    elif puzzle == "maze":
        scores = maze_image_scores(initial_image, truth, images)
        if scores is None:
            details["skipped"] = "the released evaluator skips a case whose initial image shows no start"
            return {m: None for m in METRICS} | {"invalid_outputs": "", "details": details}
        result["img_sample_acc"], result["img_step_acc"] = scores
    elif step_images is None:
        result["img_sample_acc"] = result["img_step_acc"] = None
        details["image_failure"] = "the data has no step_images (the references; see data prepare uni_mmmu)"
    else:
        result["img_sample_acc"], result["img_step_acc"] = sliding_image_scores(step_images, images)
    details["n_images"] = 0 if isinstance(images, OutputFailure) else len(images)
    return result | {"details": details}
