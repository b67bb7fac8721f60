import io
import random

from PIL import Image

from lmms_eval_unify.puzzles.domain import read_state, shortest_paths, simulate
from lmms_eval_unify.puzzles.sliding import EMPTY, SOLVED, SlidingDomain, generate_sliding

DOMAIN = SlidingDomain()


def test_moves_are_named_by_the_tile_direction():
    # empty space bottom-right: the tile above it can move down, the tile left of it can move right
    assert sorted(DOMAIN.legal_moves(SOLVED)) == ["down", "right"]
    after = DOMAIN.apply(SOLVED, "down")
    assert after.index(EMPTY) == 5 and after[8] == SOLVED[5]
    assert DOMAIN.apply(SOLVED, "up") == SOLVED  # illegal: no tile below the empty space


def test_generated_puzzles_have_unique_optimal_solution():
    rng = random.Random(11)
    for _ in range(15):
        state, moves = generate_sliding(DOMAIN, rng)
        found = shortest_paths(DOMAIN, state, lambda s: s == SOLVED, max_depth=12)
        assert found.count == 1 and found.moves == moves and 2 <= len(moves) <= 8
        assert simulate(DOMAIN, state, moves)[-1] == SOLVED


def test_parser_round_trip_resized_and_jpeg():
    rng = random.Random(5)
    for _ in range(5):
        state, moves = generate_sliding(DOMAIN, rng)
        for s in (state, *simulate(DOMAIN, state, moves)):
            image = DOMAIN.render(s)
            assert read_state(DOMAIN, image) == s
            assert read_state(DOMAIN, image.resize((150, 150), Image.Resampling.BILINEAR)) == s
            buffer = io.BytesIO()
            image.save(buffer, format="JPEG", quality=85)
            assert read_state(DOMAIN, Image.open(buffer)) == s


def test_duplicate_tile_is_not_a_state():
    grid = DOMAIN.grid_of(SOLVED)
    broken = (("2", "2", "4"),) + grid[1:]
    assert DOMAIN.state_from_grid(broken) is None
