"""The released Uni-MMMU maze/sliding rules (``official`` variant). Expected values are derived by hand from
the released ``eval_ummmu.py`` logic (crop, 2-px margin, cell edges, thresholds), as each test's comment shows."""

import json

from PIL import Image

from lmms_eval_unify.benchmarks.uni_mmmu.official import (
    BOTH,
    FLOOR,
    GOAL,
    START,
    released_maze_box,
    released_maze_parse,
    released_maze_references,
    released_sliding_grid,
    score_released,
)
from lmms_eval_unify.generation.media import MediaStore
from lmms_eval_unify.output.record import Step, UnifiedOutput
from lmms_eval_unify.puzzles import DOMAINS
from lmms_eval_unify.puzzles.maze import WHITE, MazeState
from lmms_eval_unify.puzzles.scoring import score_move_sequence
from lmms_eval_unify.puzzles.sliding import SOLVED, SlidingDomain

MAZE, SLIDING = DOMAINS["maze"], DOMAINS["sliding"]
# Walls on every edge row and column, so the board's content spans exactly its 6 x 64 px cells.
WALLS = tuple(tuple(c == "#" for c in row) for row in ("######", "#....#", "#.##.#", "#..#.#", "##...#", "######"))
STATE = MazeState(WALLS, agent=(1, 1), goal=(4, 4))


def _output(tmp_path, text: str, images: list[Image.Image]) -> str:
    store = MediaStore(tmp_path)
    paths = [store.save_image("t", 0, f"step_{i}", image) for i, image in enumerate(images)]
    return UnifiedOutput(
        "image_sequence_then_answer", text=text, images=paths, steps=[Step("x", p) for p in paths],
        root=str(store.root),
    ).to_json()  # fmt: skip


def test_released_parsers_read_the_standard_renders():
    grid = released_maze_parse(MAZE.render(STATE))
    assert grid.start == (1, 1) and grid.goal == (4, 4)
    assert grid.grid == tuple(tuple(FLOOR if t == "." else t for t in row) for row in MAZE.grid_of(STATE))
    assert released_sliding_grid(SLIDING.render(SOLVED)) == SLIDING.grid_of(SOLVED)


def test_landscape_maze_page_gives_an_empty_released_board():
    # Page 900 x 432, the 432-px render pasted at x = 450: board content rows 24..407, cols 474..857.
    # Margin 2 -> rows 22..409, cols 472..859; side 388, centre (215, 665), half 194.
    # Rows: t = 21, b = min(W=900, 409) = 409. Columns clamp by H: r = min(432, 471 + 388) = 432, l = 44.
    # The crop [21:409, 44:432] is white page, nearest to the floor colour: every cell " ", no start.
    page = Image.new("RGB", (900, 432), WHITE)
    page.paste(MAZE.render(STATE), (450, 0))
    assert released_maze_box(page) == (21, 44, 409, 432)
    parsed = released_maze_parse(page)
    assert parsed.grid == ((FLOOR,) * 6,) * 6 and parsed.start is None and parsed.goal is None
    assert MAZE.parse_grid(page) == MAZE.grid_of(STATE)  # ours reads it


def test_low_resolution_sliding_board_fails_with_the_2px_margin():
    # 4-px cells, 3-px white margin: an 18 x 18 image, tiles at rows/cols 3..14. Margin 2 -> 1..16, side 16,
    # centre 8, half 8 -> crop [0:16, 0:16]; cell edges round(i * 16 / 3) = 0, 5, 11, 16.
    # White is nearest to pink (#f781bf, label 8). Cell (0,0): 4 blue + 21 white(pink) of 25 = 0.84 -> "8".
    # Cell (2,0): 8 pink tile + 17 white(pink) = 1.0 -> "8". Every other cell's best share is <= 0.64 -> "?".
    tiny = SlidingDomain(cell_px=4, margin_px=3).render(SOLVED)
    assert tiny.size == (18, 18)
    assert released_sliding_grid(tiny) == (("8", "?", "?"), ("?", "?", "?"), ("8", "?", "?"))
    assert SLIDING.parse_grid(tiny) == SLIDING.grid_of(SOLVED)  # ours: no margin, exact 4-px cells


def test_maze_references_replay_lower_cased_moves_from_the_parsed_start():
    parsed = released_maze_parse(MAZE.render(STATE))
    # From (1,1): right -> (1,2); up is a wall -> stay (1,2); unknown "north" -> stay.
    boards = released_maze_references(parsed, ["right", "up", "north"])
    assert [b[1][2] for b in boards] == [START] * 3 and boards[0][1][1] == FLOOR and boards[0][4][4] == GOAL
    # The path (1,1) -> (4,4): down, down ... reaches the goal: the cell becomes "SG".
    path = ["right", "right", "right", "down", "down", "down"]
    assert released_maze_references(parsed, path)[-1][4][4] == BOTH


def test_maze_official_scores_a_perfect_output_and_skips_an_unreadable_start(tmp_path):
    moves = ["right", "right", "right", "down", "down", "down"]
    states = [STATE]
    for move in moves:
        states.append(MAZE.apply(states[-1], move))
    output = _output(tmp_path, f"<ANSWER_JSON>{json.dumps(moves)}</ANSWER_JSON>", [MAZE.render(s) for s in states[1:]])
    doc = {"steps": json.dumps([m.upper() for m in moves])}  # the maze truth is lower-cased
    scores = score_released("maze", doc, output, MAZE.render(STATE))
    assert [scores[m] for m in ("text_sample_acc", "text_step_acc", "img_sample_acc", "img_step_acc")] == [1.0] * 4
    page = Image.new("RGB", (900, 432), WHITE)
    page.paste(MAZE.render(STATE), (450, 0))  # released: no start on this page -> the case is skipped
    skipped = score_released("maze", doc, output, page)
    assert skipped["img_step_acc"] is None and skipped["text_sample_acc"] is None
    assert "skips" in skipped["details"]["skipped"]


def test_sliding_truth_is_not_lower_cased_in_official(tmp_path):
    # From SOLVED (empty bottom-right) "Down" slides tile 7 down. The model writes "down" (lower-cased anyway).
    after = SLIDING.apply(SOLVED, "down")
    doc = {"steps_words": json.dumps(["Down"])}
    output = _output(tmp_path, '<ANSWER_JSON>["down"]</ANSWER_JSON>', [SLIDING.render(after)])
    official = score_released("sliding", doc, output, SLIDING.render(SOLVED), [SLIDING.render(after)])
    assert (official["text_sample_acc"], official["text_step_acc"]) == (0.0, 0.0)  # "down" != "Down"
    assert (official["img_sample_acc"], official["img_step_acc"]) == (1.0, 1.0)
    ours = score_move_sequence(SLIDING, doc, output, SLIDING.render(SOLVED))
    assert (ours["text_sample_acc"], ours["img_step_acc"]) == (1.0, 1.0)


def test_sliding_official_references_are_the_step_images_not_the_replay(tmp_path):
    # The data names "down" but its step image shows "up" played (a flipped fork). A model drawing the step
    # image scores image 1 under the released rules, 0 under ours (we replay the named move).
    start = SLIDING.apply(SOLVED, "down")  # empty at row 1, col 2: both "up" and "down" are legal
    shown = SLIDING.apply(start, "up")
    assert shown != SLIDING.apply(start, "down")
    doc = {"steps_words": json.dumps(["down"])}
    output = _output(tmp_path, '<ANSWER_JSON>["down"]</ANSWER_JSON>', [SLIDING.render(shown)])
    official = score_released("sliding", doc, output, SLIDING.render(start), [SLIDING.render(shown)])
    assert (official["text_step_acc"], official["img_step_acc"]) == (1.0, 1.0)
    ours = score_move_sequence(SLIDING, doc, output, SLIDING.render(start))
    assert (ours["text_step_acc"], ours["img_step_acc"]) == (1.0, 0.0)
    # No step images in the data: the released image rule cannot be applied -> None with the reason.
    missing = score_released("sliding", doc, output, SLIDING.render(start), None)
    assert missing["img_step_acc"] is None and "step_images" in missing["details"]["image_failure"]
    # Empty truth: the released sliding rule credits an empty prediction (1), the maze rule does not.
    nothing = _output(tmp_path, "", [])
    empty = score_released("sliding", {"steps_words": "[]"}, nothing, SLIDING.render(start), [])
    assert (empty["img_sample_acc"], empty["img_step_acc"], empty["text_step_acc"]) == (1.0, 1.0, 0.0)


def test_official_never_raises_on_a_corrupt_image(tmp_path):
    store = MediaStore(tmp_path)
    path = store.save_image("t", 0, "step_0", SLIDING.render(SOLVED))
    (store.root / path).write_bytes(b"not a png")
    output = UnifiedOutput("image_sequence_then_answer", text="", images=[path], root=str(store.root)).to_json()
    scores = score_released("sliding", {"steps_words": '["down"]'}, output, SLIDING.render(SOLVED), [])
    assert scores["img_step_acc"] == 0.0 and scores["invalid_outputs"] == "corrupt_image"
