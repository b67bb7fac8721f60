"""``UnifiedModel`` fulfils the contract protocols and the engine are written against."""

import inspect

from conftest import ScriptedAdapter

from lmms_eval_unify.generation.primitives import Primitives
from lmms_eval_unify.generation.protocols import PROTOCOLS
from lmms_eval_unify.integration.model import UnifiedModel


def contract_members() -> set[str]:
    """The attributes and methods :class:`Primitives` declares."""
    declared = {name for name in vars(Primitives) if not name.startswith("_")}
    return declared | set(Primitives.__annotations__)


def test_a_unified_model_has_every_member_of_the_contract(tmp_path):
    model = ScriptedAdapter([], output_dir=str(tmp_path))
    missing = "not there"
    assert {"understand", "generate_image_batch", "media", "request", "batch_size"} <= contract_members()
    for name in sorted(contract_members()):
        assert inspect.getattr_static(model, name, missing) is not missing, name
        if inspect.isfunction(getattr(Primitives, name, None)):
            expected = inspect.signature(getattr(Primitives, name))
            assert inspect.signature(getattr(UnifiedModel, name)) == expected, name


def test_every_protocol_needs_only_primitives_of_the_contract():
    needs = set().union(*(spec.needs for spec in PROTOCOLS.values()))
    assert needs <= contract_members()
