"""GapEval "Gap Score": a two-dimensional IRT (MIRT) model fitted by MAP with pyro.

Each model (UMM) is fitted on its own: one ability pair (θ_text, θ_image) per category, a difficulty
pair β shared by the categories, and a Gaussian prior N(μ, LLᵀ) over the category abilities with
learned μ and Cholesky factor L.  The per-category gap is

    G_c = σ(logit(|Δ_c| / (1 + |Δ_c|)) + λ_fail·p00_c − λ_succ·p11_c),   Δ_c = θ_text,c − θ_image,c,

reported on a 0–100 scale (lower is better); the overall gap is the unweighted mean over categories.
See ``docs/gap_score.md`` for the two variants (``official`` and ``stable``) and why they differ.

``official`` fits all models in one batched pyro model (every term of the objective is a sum of per-model
terms).  ``stable`` evaluates the same objective, its gradient and Hessian in closed form and iterates each
model only until it converges, with arithmetic that never mixes rows: a model's fit is bitwise the same alone
or in any batch, and the cost is the sum of the models' own iteration counts.
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Literal, NamedTuple, cast

import numpy as np
import pyro
import pyro.distributions as dist
import torch
import torch.nn.functional as F
from pyro import poutine

from lmms_eval_unify.benchmarks.gapeval.spec import CATEGORIES

Variant = Literal["official", "stable"]
VARIANTS: tuple[str, ...] = ("official", "stable")
GAPEVAL_CATEGORIES: tuple[str, ...] = CATEGORIES
"""GapEval's four categories in the paper's order (the benchmark spec's list)."""


@dataclass(frozen=True)
class GapScoreParams:
    """Every constant of the metric, with the GapEval defaults (authors' ``evaluate.py``).

    ``lambda_fail`` / ``lambda_succ`` are the co-failure penalty and co-success reward (the issue's
    α = 2.7 and β = 1.05).  ``lr``, ``weight_decay``, ``adam_*`` and ``steps`` drive the ``official`` AdamW run;
    ``stable_max_iter`` and ``step_tol`` drive the ``stable`` Newton run; ``step_tol`` and ``flat_tol`` also set
    the ``converged`` flag of both variants.  ``jit`` traces the ``official`` pyro objective to TorchScript
    (``stable`` does not use pyro's trace: its objective is in closed form).
    """

    pseudo_count: float = 1000.0
    lambda_fail: float = 2.7
    lambda_succ: float = 1.05
    anchor: float = 1e-3
    log_eps: float = 1e-8
    init_clip: float = 1e-5
    gap_clip: float = 1e-6
    chol_diag_floor: float = 1e-4
    chol_init: tuple[tuple[float, float], tuple[float, float]] = ((0.1, 0.0), (0.05, 0.1))
    lr: float = 0.05
    weight_decay: float = 1e-4
    adam_betas: tuple[float, float] = (0.9, 0.999)
    adam_eps: float = 1e-8
    steps: int = 2000
    stable_max_iter: int = 2000
    step_tol: float = 1e-5
    flat_tol: float = 1e-5
    jit: bool = True


class JointCounts(NamedTuple):
    """2×2 outcome counts of one category: both right, text only, image only, both wrong."""

    n11: float
    n10: float
    n01: float
    n00: float


@dataclass(frozen=True)
class PairCounts:
    """``joint_counts_from_pairs`` output: the counts plus how many sides were missing."""

    counts: JointCounts
    missing_text: int
    missing_image: int


@dataclass(frozen=True)
class FitStatus:
    """Whether one model's fit reached a local minimum, by which variant and under which test.

    ``newton_step`` is max |H⁻¹∇J| at the last iterate (inf where the Hessian H is not positive definite);
    the fit converged when it is below ``step_tol`` and H has no curvature below −``flat_tol``.
    """

    variant: str
    converged: bool
    steps_run: int
    newton_step: float
    step_tol: float
    flat_tol: float

    @property
    def criterion(self) -> str:
        """The convergence test, in words."""
        return f"full Newton step < {self.step_tol:g} in every parameter, no curvature below -{self.flat_tol:g}"

    def describe(self) -> str:
        """One line: the variant, converged or not, after how many steps, with the test it was held to."""
        steps = (
            f"its fixed {self.steps_run} AdamW steps"
            if self.variant == "official"
            else f"{self.steps_run} Newton iterations"
        )
        state = "converged" if self.converged else "did not converge"
        step = (
            f"full Newton step {self.newton_step:.2g}"
            if math.isfinite(self.newton_step)
            else "not at a stationary point: negative curvature or a gradient along a flat direction"
        )
        return f"{self.variant} fit {state} after {steps} ({step}; converged = {self.criterion})"


@dataclass(frozen=True)
class CategoryGap:
    """Fitted abilities and gap of one (model, category) cell; ``gap`` is on the 0–100 scale.

    ``converged`` and ``fit`` are the flag and status of the model's fit, which all its cells share (one joint
    fit per model).
    """

    theta_text: float
    theta_image: float
    delta: float
    gap: float
    converged: bool
    fit: FitStatus


@dataclass(frozen=True)
class ModelGap:
    """Per-model result: category cells, overall gap (0–100) and fit diagnostics.

    ``objective`` is the spec's MAP objective J (pyro's negative log joint without the prior's 2π
    constant): for ``official`` the lowest pre-step J (the authors' selection rule; θ is the iterate
    right after that step), for ``stable`` J at the returned point.  ``grad_max`` (max |∇J|) and
    ``newton_step`` (max |H⁻¹∇J|, inf where the Hessian H is not positive definite) are taken at the
    optimiser's last iterate; ``converged`` is ``newton_step < step_tol``: a local minimum, with every
    parameter within about ``step_tol`` of it.  ``fit`` carries the flag with the variant and the test.
    """

    categories: dict[str, CategoryGap]
    overall: float
    beta_text: float
    beta_image: float
    objective: float
    steps_run: int
    grad_max: float
    newton_step: float
    converged: bool
    fit: FitStatus


@dataclass(frozen=True)
class GapScoreResult:
    """Gap scores of all models for one variant."""

    variant: str
    params: GapScoreParams
    categories: tuple[str, ...]
    models: dict[str, ModelGap]

    def not_converged(self) -> list[str]:
        """Names of the models whose fit did not converge."""
        return [name for name, fit in self.models.items() if not fit.converged]


class GapFitNotConverged(UserWarning):
    """A ``stable`` fit stopped at ``stable_max_iter`` before reaching a local minimum."""


_Objective = Callable[[torch.Tensor], torch.Tensor]


class _FitOutput(NamedTuple):
    """Optimiser result per model: θ (C, M, 2) and β (M, 2) in float64, J, iterations, max |∇J|,
    max |full Newton step| and the convergence flag."""

    theta: torch.Tensor
    beta: torch.Tensor
    loss: np.ndarray
    steps: np.ndarray
    grad_max: np.ndarray
    newton_step: np.ndarray
    converged: np.ndarray


class _Data(NamedTuple):
    """Pseudo-counts, each of shape (categories, models)."""

    text_succ: torch.Tensor
    text_fail: torch.Tensor
    image_succ: torch.Tensor
    image_fail: torch.Tensor


def joint_counts_from_pairs(pairs: Iterable[tuple[object, object]]) -> PairCounts:
    """Tally per-question (text_correct, image_correct) outcomes; ``None`` (missing) counts as wrong."""
    tally = {(True, True): 0, (True, False): 0, (False, True): 0, (False, False): 0}
    missing_text = missing_image = 0
    for text_ok, image_ok in pairs:
        missing_text += text_ok is None
        missing_image += image_ok is None
        tally[(text_ok is not None and bool(text_ok), image_ok is not None and bool(image_ok))] += 1
    counts = JointCounts(tally[(True, True)], tally[(True, False)], tally[(False, True)], tally[(False, False)])
    return PairCounts(counts, missing_text, missing_image)


def _proportions(
    joint_counts: Mapping[str, Mapping[str, Sequence[float]]],
) -> tuple[list[str], tuple[str, ...], torch.Tensor]:
    """Validate the input and return model names, categories and proportions of shape (C, M, 4)."""
    names = list(joint_counts)
    if not names:
        raise ValueError("joint_counts is empty")
    categories = tuple(joint_counts[names[0]])
    rows = []
    for name in names:
        if set(joint_counts[name]) != set(categories):
            raise ValueError(f"{name}: categories {sorted(joint_counts[name])} != {sorted(categories)}")
        rows.append([[float(x) for x in joint_counts[name][c]] for c in categories])
    counts = torch.tensor(rows, dtype=torch.float64).transpose(0, 1)
    if counts.shape[-1] != 4:
        raise ValueError("each cell must be (n11, n10, n01, n00)")
    if (counts < 0).any() or not torch.isfinite(counts).all():
        raise ValueError("joint counts must be finite and non-negative")
    totals = counts.sum(-1, keepdim=True)
    if (totals <= 0).any():
        raise ValueError("every (model, category) cell needs at least one question")
    return names, categories, counts / totals


def _pseudo_counts(props: torch.Tensor, pseudo_count: float) -> _Data:
    """Marginal success/failure pseudo-counts N·p of each modality."""
    n = props * pseudo_count
    p11, p10, p01, p00 = n.unbind(-1)
    return _Data(p11 + p10, p01 + p00, p11 + p01, p10 + p00)


def _cholesky(chol_raw: torch.Tensor, floor: float) -> torch.Tensor:
    """Lower-triangular factor with diagonal softplus(raw) + floor."""
    lower = torch.tril(chol_raw, diagonal=-1)
    return lower + torch.diag_embed(F.softplus(torch.diagonal(chol_raw, dim1=-2, dim2=-1)) + floor)


def _log_lik(logits: torch.Tensor, data: _Data, eps: float) -> torch.Tensor:
    """Pseudo-count Bernoulli log-likelihood per (category, model), with the official ε inside the logs."""
    p_text, p_image = torch.sigmoid(logits).unbind(-1)
    return (
        data.text_succ * torch.log(p_text + eps)
        + data.text_fail * torch.log(1.0 - p_text + eps)
        + data.image_succ * torch.log(p_image + eps)
        + data.image_fail * torch.log(1.0 - p_image + eps)
    )


def _mirt_model(
    data: _Data, params: GapScoreParams, beta: torch.Tensor, mu: torch.Tensor, scale_tril: torch.Tensor
) -> None:
    """Pyro model: θ_c ~ N(μ, KKᵀ) per (category, model); outcomes ~ Bernoulli(σ(θ_c − β))."""
    n_cat, n_models = data.text_succ.shape
    with pyro.plate("models", n_models, dim=-1):
        pyro.factor("anchor", -params.anchor * (beta.square().sum(-1) + mu.square().sum(-1)))
        with pyro.plate("categories", n_cat, dim=-2):
            theta = pyro.sample("theta", dist.MultivariateNormal(mu, scale_tril=scale_tril))
            pyro.factor("likelihood", _log_lik(theta - beta, data, params.log_eps))


def _map_guide(theta: torch.Tensor) -> None:
    """Delta guide: the MAP point estimate of θ."""
    n_cat, n_models, _ = theta.shape
    with pyro.plate("models", n_models, dim=-1), pyro.plate("categories", n_cat, dim=-2):
        pyro.sample("theta", dist.Delta(theta, event_dim=1))


def _map_objective_fn(data: _Data, params: GapScoreParams) -> Callable[..., torch.Tensor]:
    """Per-model MAP objective J(θ, β, μ, K), shape (models,): the Delta-guide ELBO loss (K: prior scale_tril).

    Equals the spec's J (pyro's negative log joint minus the prior's C·log 2π constant).
    """
    n_cat = data.text_succ.shape[0]
    log_2pi_const = n_cat * math.log(2.0 * math.pi)

    def objective(theta: torch.Tensor, beta: torch.Tensor, mu: torch.Tensor, scale_tril: torch.Tensor) -> torch.Tensor:
        guide_trace = poutine.trace(_map_guide).get_trace(theta)
        model_trace = poutine.trace(poutine.replay(_mirt_model, trace=guide_trace)).get_trace(
            data, params, beta, mu, scale_tril
        )
        log_joint = torch.zeros(theta.shape[1], dtype=theta.dtype)
        for site in model_trace.nodes.values():
            if site["type"] == "sample":
                distribution = cast(dist.Distribution, site["fn"])  # a sample site's fn is its distribution
                log_prob = distribution.log_prob(site["value"])
                log_joint = log_joint + (log_prob.sum(0) if log_prob.dim() == 2 else log_prob)
        return -log_joint - log_2pi_const

    return objective


class _Layout(NamedTuple):
    """How one row of the flat (models, P) ``official`` tensor maps to the parameters: [θ (C·2), β (2), μ (2),
    lower triangle of L_raw (3)], prior scale K = L (the authors' factor: tril(L_raw) with diagonal softplus + floor).
    """

    n_cat: int

    def pack(self, theta: torch.Tensor, beta: torch.Tensor, mu: torch.Tensor, chol_raw: torch.Tensor) -> torch.Tensor:
        """The flat (models, P) tensor of (θ, β, μ, L_raw)."""
        parts = [theta.transpose(0, 1).reshape(theta.shape[1], -1), beta, mu]
        return torch.cat(parts + [chol_raw[:, [0, 1, 1], [0, 0, 1]]], dim=-1)

    def unpack(self, x: torch.Tensor, floor: float) -> tuple[torch.Tensor, ...]:
        """(θ, β, μ, K) from the flat tensor, K the prior's scale_tril."""
        n_models, width = x.shape[0], 2 * self.n_cat
        theta = x[:, :width].reshape(n_models, self.n_cat, 2).transpose(0, 1)
        l00, l10, l11 = x[:, -3:].unbind(-1)
        factor = torch.stack([torch.stack([l00, torch.zeros_like(l00)], -1), torch.stack([l10, l11], -1)], -2)
        return theta, x[:, width : width + 2], x[:, -5:-3], _cholesky(factor, floor)


@contextmanager
def _single_thread() -> Iterator[None]:
    """Run on one intra-op thread (as the authors do): the tensors are tiny, threading only adds overhead."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def _flat_objective(data: _Data, params: GapScoreParams, layout: _Layout, x0: torch.Tensor) -> _Objective:
    """Per-model J as a function of the flat tensor, traced to TorchScript when ``params.jit``."""
    map_objective = _map_objective_fn(data, params)

    def objective(x: torch.Tensor) -> torch.Tensor:
        return map_objective(*layout.unpack(x, params.chol_diag_floor))

    if not params.jit:
        return objective
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        warnings.filterwarnings("ignore", message=".*torch.jit.trace.*deprecated")
        return torch.jit.trace(objective, (x0,), check_trace=False)


def _initial_state(
    data: _Data, params: GapScoreParams
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Logit initialisation: θ = logit(observed rates), β = 0, μ = mean θ, L_raw = chol_init."""
    clip, dtype = params.init_clip, data.text_succ.dtype
    rates = torch.stack(
        [
            data.text_succ / (data.text_succ + data.text_fail),
            data.image_succ / (data.image_succ + data.image_fail),
        ],
        dim=-1,
    )
    theta = torch.logit(rates.clamp(clip, 1.0 - clip)).to(dtype)
    n_models = theta.shape[1]
    chol_raw = torch.tensor(params.chol_init, dtype=dtype).expand(n_models, 2, 2)
    return theta, torch.zeros(n_models, 2, dtype=dtype), theta.mean(0), chol_raw


def _per_model_grad(
    objective: _Objective, x: torch.Tensor, create_graph: bool = False
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per-model objective and its gradient rows (objectives are independent across models)."""
    x = x.detach().requires_grad_()
    loss = objective(x)
    (grad,) = torch.autograd.grad(loss.sum(), x, create_graph=create_graph)
    return x, loss, grad


def _adamw_step(
    x: torch.Tensor,
    grad: torch.Tensor,
    moments: tuple[torch.Tensor, torch.Tensor],
    step: int,
    params: GapScoreParams,
) -> None:
    """One in-place update with the arithmetic of ``torch.optim.AdamW`` (single-tensor path).

    Written out so that a fit does not pay torch.optim's one-off ~1 s lazy import of torch._dynamo
    nor its per-step bookkeeping; the tests check it against torch.optim.AdamW bit for bit.
    """
    beta1, beta2 = params.adam_betas
    exp_avg, exp_avg_sq = moments
    x.mul_(1 - params.lr * params.weight_decay)
    exp_avg.lerp_(grad, 1 - beta1)
    exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
    denom = (exp_avg_sq.sqrt() / (1 - beta2**step) ** 0.5).add_(params.adam_eps)
    x.addcdiv_(exp_avg, denom, value=-params.lr / (1 - beta1**step))


def _batched_hessian(grad: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """Per-model Hessian blocks (M, P, P), one Hessian-vector product per coordinate."""
    columns = [torch.autograd.grad(grad[:, k].sum(), x, retain_graph=True)[0] for k in range(x.shape[1])]
    return torch.stack(columns, dim=-1)


def _fit_official(data: _Data, params: GapScoreParams) -> _FitOutput:
    """AdamW on the pyro objective for a fixed number of steps; keep the iterate after the step with the lowest
    pre-step loss.  The ``converged`` flag comes from the Newton test at the last iterate."""
    layout = _Layout(n_cat=data.text_succ.shape[0])
    x0 = layout.pack(*_initial_state(data, params))
    objective = _flat_objective(data, params, layout, x0)
    x = x0.clone().requires_grad_()
    moments = (torch.zeros_like(x0), torch.zeros_like(x0))
    best_loss = torch.full((x0.shape[0],), math.inf, dtype=x0.dtype)
    best_x = x0
    for step in range(1, params.steps + 1):
        loss = objective(x)
        (grad,) = torch.autograd.grad(loss.sum(), x)
        with torch.no_grad():
            _adamw_step(x, grad, moments, step, params)
            better = loss < best_loss
            best_loss = torch.where(better, loss, best_loss)
            best_x = torch.where(better[:, None], x, best_x)
    x, _, grad = _per_model_grad(objective, x, create_graph=True)
    test = _newton_test(_batched_hessian(grad, x).detach().double().numpy(), grad.detach().double().numpy(), params)
    theta, beta, _, _ = layout.unpack(best_x, params.chol_diag_floor)
    return _FitOutput(
        theta=theta.double(),
        beta=beta.double(),
        loss=best_loss.double().numpy(),
        steps=np.full(x0.shape[0], params.steps),
        grad_max=grad.detach().abs().amax(-1).double().numpy(),
        newton_step=test.step,
        converged=test.step < params.step_tol,
    )


# --- the Newton test (both variants) and the `stable` fit: closed-form J, ∇J, ∇²J, one model per row --------------


def _ordered_sum(values: np.ndarray) -> np.ndarray:
    """Sum over the leading axis in index order: a model's sum never depends on the other rows of the batch (numpy's
    own reductions may pick a pairwise or a sequential order from the array's shape)."""
    return functools.reduce(np.add, values)


def _matvec(matrix: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """matrix @ vector for (M, P, P) and (M, P), summed in index order (not BLAS, whose kernels may sum a row in
    an order that depends on the memory alignment of the matrix within the batch)."""
    return _ordered_sum(np.moveaxis(matrix * vector[:, None, :], -1, 0))


class _NewtonTest(NamedTuple):
    """The Newton test per model at the current iterate (see ``_newton_test``)."""

    step: np.ndarray
    lowest: np.ndarray
    direction: np.ndarray


def _newton_test(hess: np.ndarray, grad: np.ndarray, params: GapScoreParams) -> _NewtonTest:
    """Per model max |H⁺∇J|, the full Newton step with directions of curvature ≤ ``flat_tol`` left out; inf at a
    saddle (curvature < −``flat_tol``) or where ∇J along a left-out direction exceeds ``flat_tol``.  A model has
    converged where it is below ``step_tol``.

    A left-out direction is one along which J is flat to ``flat_tol``: the prior's factor L is not unique where
    LLᵀ is singular (e.g. a modality whose category abilities coincide), and no θ depends on it.  Also returns
    each model's lowest curvature and its direction (for leaving a saddle).
    """
    flat = params.flat_tol
    curvature, directions = np.linalg.eigh(hess)
    along = _matvec(np.swapaxes(directions, -1, -2), grad)
    curved = curvature > flat
    coefficients = np.where(curved, along / np.where(curved, curvature, 1.0), 0.0)
    stationary = (curvature >= -flat).all(-1) & ((np.abs(along) <= flat) | curved).all(-1)
    step = np.where(stationary, np.abs(_matvec(directions, coefficients)).max(-1), math.inf)
    return _NewtonTest(step, curvature[:, 0], directions[..., 0])


class _StableData(NamedTuple):
    """Pseudo-counts as float64 arrays of shape (categories, models)."""

    text_succ: np.ndarray
    text_fail: np.ndarray
    image_succ: np.ndarray
    image_fail: np.ndarray

    def of(self, models: np.ndarray) -> _StableData:
        """The counts of the given models (row indices)."""
        return _StableData(*(counts[:, models] for counts in self))


class _PriorFactor(NamedTuple):
    """K, the Cholesky factor of floor²·I + LLᵀ for L = [[l00, 0], [l10, l11]], per model.

    K = [[√a, 0], [l00·l10/√a, √e]] with a = floor² + l00² and e = floor² + l11² + floor²·l10²/a, so that
    det = a·e.  Written out because no term cancels: a Cholesky factorisation computes K11² as
    floor² + l10² + l11² − (l00·l10)²/a, which loses up to eps/floor² (≈ 2e-8) of relative precision when L is
    near rank one, and that rounding in ∇J kept Newton steps above ``step_tol`` (docs/gap_score.md).
    """

    a: np.ndarray
    e: np.ndarray
    k00: np.ndarray
    k10: np.ndarray
    k11: np.ndarray

    @classmethod
    def of(cls, l00: np.ndarray, l10: np.ndarray, l11: np.ndarray, floor: float) -> _PriorFactor:
        """The factor for the given entries of L."""
        floor2 = floor**2
        a = floor2 + l00 * l00
        e = floor2 + l11 * l11 + floor2 * (l10 * l10) / a
        k00 = np.sqrt(a)
        return cls(a, e, k00, l00 * l10 / k00, np.sqrt(e))


class _StablePoint(NamedTuple):
    """One row per model of the ``stable`` parameters [z (C·2), μ (2), l00, l10, l11], β ≡ 0, unpacked:
    whitened abilities z (categories, models) per modality, μ, L, its prior factor K and θ_c = μ + K z_c."""

    z_text: np.ndarray
    z_image: np.ndarray
    mu_text: np.ndarray
    mu_image: np.ndarray
    chol: tuple[np.ndarray, np.ndarray, np.ndarray]
    factor: _PriorFactor
    theta_text: np.ndarray
    theta_image: np.ndarray

    @classmethod
    def of(cls, x: np.ndarray, floor: float) -> _StablePoint:
        """Unpack the (models, P) parameter rows."""
        width = x.shape[1] - 5
        z_text, z_image = x[:, 0:width:2].T, x[:, 1:width:2].T
        mu_text, mu_image, l00, l10, l11 = x[:, width:].T
        factor = _PriorFactor.of(l00, l10, l11, floor)
        theta_text = mu_text + factor.k00 * z_text
        theta_image = mu_image + factor.k10 * z_text + factor.k11 * z_image
        return cls(z_text, z_image, mu_text, mu_image, (l00, l10, l11), factor, theta_text, theta_image)


def _sigmoid_pair(theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(σ(θ), 1 − σ(θ)) as the authors compute them (1 − p, not σ(−θ))."""
    with np.errstate(over="ignore"):  # exp(−θ) = inf at a wild trial point gives p = 0, as it should
        p = 1.0 / (1.0 + np.exp(-theta))
    return p, 1.0 - p


def _bernoulli_nll(theta: np.ndarray, succ: np.ndarray, fail: np.ndarray, eps: float) -> np.ndarray:
    """−[s·log(σ(θ) + ε) + f·log(1 − σ(θ) + ε)], the pseudo-count likelihood of one modality."""
    p, q = _sigmoid_pair(theta)
    return -(succ * np.log(p + eps) + fail * np.log(q + eps))


def _bernoulli_nll_derivatives(
    theta: np.ndarray, succ: np.ndarray, fail: np.ndarray, eps: float
) -> tuple[np.ndarray, np.ndarray]:
    """First and second derivative in θ of ``_bernoulli_nll``."""
    p, q = _sigmoid_pair(theta)
    w, tilt, p_eps, q_eps = p * q, 1.0 - 2.0 * p, p + eps, q + eps
    first = w * (fail / q_eps - succ / p_eps)
    second = w * (fail * (tilt * q_eps + w) / (q_eps * q_eps) - succ * (tilt * p_eps - w) / (p_eps * p_eps))
    return first, second


def _stable_objective(x: np.ndarray, data: _StableData, params: GapScoreParams) -> np.ndarray:
    """Per-model J of the ``stable`` parametrisation, shape (models,): the pyro objective at
    θ_c = μ + K z_c, β = 0 (the tests check the two against each other), with the Mahalanobis term ½‖z‖²
    and the log-determinant (C/2)·log(a·e) taken in closed form."""
    point = _StablePoint.of(x, params.chol_diag_floor)
    n_cat, eps = point.z_text.shape[0], params.log_eps
    nll = _bernoulli_nll(point.theta_text, data.text_succ, data.text_fail, eps) + _bernoulli_nll(
        point.theta_image, data.image_succ, data.image_fail, eps
    )
    mahalanobis = 0.5 * _ordered_sum(point.z_text * point.z_text + point.z_image * point.z_image)
    log_det = 0.5 * n_cat * (np.log(point.factor.a) + np.log(point.factor.e))
    anchor = params.anchor * (point.mu_text * point.mu_text + point.mu_image * point.mu_image)
    return _ordered_sum(nll) + mahalanobis + log_det + anchor


def _outer(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Outer products u vᵀ over the last axis (exactly symmetric for u = v: products commute)."""
    return u[..., :, None] * v[..., None, :]


def _factor_derivatives(point: _StablePoint, floor: float) -> tuple[np.ndarray, ...]:
    """Derivatives in (l00, l10, l11) of K00, K10, K11 and log det = log(a·e): first (M, 3), second (M, 3, 3)."""
    l00, l10, l11 = point.chol
    a, e, k00, _, k11 = point.factor
    floor2, zero = floor**2, np.zeros_like(a)
    a32 = a * k00
    d_k00 = np.stack([l00 / k00, zero, zero], -1)
    d_k10 = np.stack([floor2 * l10 / a32, l00 / k00, zero], -1)
    d_e = np.stack([-2.0 * floor2 * l00 * (l10 * l10) / (a * a), 2.0 * floor2 * l10 / a, 2.0 * l11], -1)
    d_k11 = d_e / (2.0 * k11)[:, None]
    d_logdet = d_e / e[:, None]
    d_logdet[:, 0] += 2.0 * l00 / a
    dd_k00, dd_k10, dd_e = (np.zeros(a.shape + (3, 3)) for _ in range(3))
    dd_k00[:, 0, 0] = floor2 / a32
    dd_k10[:, 0, 0] = -3.0 * floor2 * l00 * l10 / (a32 * a)
    dd_k10[:, 0, 1] = dd_k10[:, 1, 0] = floor2 / a32
    dd_e[:, 0, 0] = -2.0 * floor2 * (l10 * l10) * (floor2 - 3.0 * l00 * l00) / (a * a * a)
    dd_e[:, 0, 1] = dd_e[:, 1, 0] = -4.0 * floor2 * l00 * l10 / (a * a)
    dd_e[:, 1, 1] = 2.0 * floor2 / a
    dd_e[:, 2, 2] = 2.0
    de_de = _outer(d_e, d_e)
    dd_k11 = dd_e / (2.0 * k11)[:, None, None] - de_de / (4.0 * k11 * k11 * k11)[:, None, None]
    dd_logdet = dd_e / e[:, None, None] - de_de / (e * e)[:, None, None]
    dd_logdet[:, 0, 0] += 2.0 * (floor2 - l00 * l00) / (a * a)
    return d_k00, d_k10, d_k11, d_logdet, dd_k00, dd_k10, dd_k11, dd_logdet


def _stable_derivatives(
    x: np.ndarray, data: _StableData, params: GapScoreParams
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-model J, ∇J (M, P) and ∇²J (M, P, P) of ``_stable_objective``, by the chain rule through
    θT_c = μT + K00·zT_c and θI_c = μI + K10·zT_c + K11·zI_c (the tests check them against autograd)."""
    point = _StablePoint.of(x, params.chol_diag_floor)
    n_models, width = x.shape
    n_cat, eps, chol = point.z_text.shape[0], params.log_eps, slice(width - 3, width)
    d_text, h_text = _bernoulli_nll_derivatives(point.theta_text, data.text_succ, data.text_fail, eps)
    d_image, h_image = _bernoulli_nll_derivatives(point.theta_image, data.image_succ, data.image_fail, eps)
    d_k00, d_k10, d_k11, d_logdet, dd_k00, dd_k10, dd_k11, dd_logdet = _factor_derivatives(
        point, params.chol_diag_floor
    )
    k00, k10, k11 = point.factor.k00, point.factor.k10, point.factor.k11
    z_text, z_image = point.z_text, point.z_image
    # ∂θ/∂(parameters) per category: rows (C, M, P)
    jac_text, jac_image = np.zeros((n_cat, n_models, width)), np.zeros((n_cat, n_models, width))
    categories = np.arange(n_cat)
    jac_text[categories, :, 2 * categories] = k00
    jac_text[:, :, width - 5] = 1.0
    jac_text[:, :, chol] = z_text[..., None] * d_k00
    jac_image[categories, :, 2 * categories] = k10
    jac_image[categories, :, 2 * categories + 1] = k11
    jac_image[:, :, width - 4] = 1.0
    jac_image[:, :, chol] = z_text[..., None] * d_k10 + z_image[..., None] * d_k11

    grad = _ordered_sum(d_text[..., None] * jac_text + d_image[..., None] * jac_image)
    grad[:, : width - 5] += np.stack([z_text, z_image], -1).transpose(1, 0, 2).reshape(n_models, -1)
    grad[:, width - 5 : width - 3] += 2.0 * params.anchor * np.stack([point.mu_text, point.mu_image], -1)
    grad[:, chol] += 0.5 * n_cat * d_logdet

    hess = _ordered_sum(
        h_text[..., None, None] * _outer(jac_text, jac_text) + h_image[..., None, None] * _outer(jac_image, jac_image)
    )
    # second derivatives of θ: ∂²θ/∂z∂l from ∂K/∂l, ∂²θ/∂l² from ∂²K/∂l²
    cross_text = d_text[..., None] * d_k00 + d_image[..., None] * d_k10
    cross_image = d_image[..., None] * d_k11
    for c in range(n_cat):
        hess[:, 2 * c, chol] += cross_text[c]
        hess[:, chol, 2 * c] += cross_text[c]
        hess[:, 2 * c + 1, chol] += cross_image[c]
        hess[:, chol, 2 * c + 1] += cross_image[c]
    weights = [_ordered_sum(d * z) for d, z in ((d_text, z_text), (d_image, z_text), (d_image, z_image))]
    chol_block = sum(w[:, None, None] * dd for w, dd in zip(weights, (dd_k00, dd_k10, dd_k11), strict=True))
    hess[:, chol, chol] += chol_block + 0.5 * n_cat * dd_logdet
    diagonal = np.arange(width - 5)
    hess[:, diagonal, diagonal] += 1.0
    hess[:, width - 5 : width - 3, width - 5 : width - 3] += 2.0 * params.anchor * np.eye(2)
    return _stable_objective(x, data, params), grad, hess


def _stable_start(data: _StableData, params: GapScoreParams) -> np.ndarray:
    """Logit initialisation in the ``stable`` rows: θ = logit(observed rates), μ = mean θ, L = the authors'
    factor at ``chol_init``, z = K⁻¹(θ − μ)."""
    clip, floor = params.init_clip, params.chol_diag_floor
    rates = (data.text_succ / (data.text_succ + data.text_fail), data.image_succ / (data.image_succ + data.image_fail))
    theta_text, theta_image = (np.log(r / (1.0 - r)) for r in (np.clip(rate, clip, 1.0 - clip) for rate in rates))
    n_cat, n_models = theta_text.shape
    mu_text, mu_image = _ordered_sum(theta_text) / n_cat, _ordered_sum(theta_image) / n_cat
    (raw00, _), (raw10, raw11) = params.chol_init
    l00, l10, l11 = (
        np.full(n_models, v) for v in (np.logaddexp(0.0, raw00) + floor, raw10, np.logaddexp(0.0, raw11) + floor)
    )
    factor = _PriorFactor.of(l00, l10, l11, floor)
    z_text = (theta_text - mu_text) / factor.k00
    z_image = (theta_image - mu_image - factor.k10 * z_text) / factor.k11
    z = np.stack([z_text, z_image], -1).transpose(1, 0, 2).reshape(n_models, -1)
    return np.concatenate([z, np.stack([mu_text, mu_image, l00, l10, l11], -1)], -1)


def _marquardt_step(hess: np.ndarray, grad: np.ndarray, damping: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Solve (H + λ·diag|H|) d = −g per model through the eigenvalues of the scaled H; also return whether the
    damped system is positive definite (the step is 0 where it is not)."""
    scale = np.sqrt(np.maximum(np.abs(np.diagonal(hess, axis1=-2, axis2=-1)), 1e-8))
    curvature, directions = np.linalg.eigh(hess / _outer(scale, scale))
    ok = curvature[:, 0] + damping > 0.0
    shifted = np.where(ok[:, None], curvature + damping[:, None], 1.0)
    along = _matvec(np.swapaxes(directions, -1, -2), -grad / scale)
    step = _matvec(directions, along / shifted) / scale
    return np.where(ok[:, None], step, 0.0), ok


def _leave_saddle(
    x: np.ndarray, loss: np.ndarray, direction: np.ndarray, data: _StableData, params: GapScoreParams
) -> np.ndarray:
    """Move each row along its negative-curvature direction (either sign, lengths 1 to 1e-4) to the candidate
    with the lowest J, if it is lower than ``loss``; damped Newton steps cannot leave a saddle whose gradient is
    zero (e.g. a triangular L with L₀₀ = L₁₀ = 0, symmetric under their joint sign flip)."""
    best_x, best_loss = x, loss
    for length in (1.0, -1.0, 1e-1, -1e-1, 1e-2, -1e-2, 1e-4, -1e-4):
        candidate = x + length * direction
        trial = _stable_objective(candidate, data, params)
        better = trial < best_loss
        best_x = np.where(better[:, None], candidate, best_x)
        best_loss = np.where(better, trial, best_loss)
    return best_x


def _fit_stable(data: _StableData, params: GapScoreParams) -> _FitOutput:
    """Levenberg–Marquardt (damped Newton) per model, each until its Newton test passes (``_newton_test``) or it
    has run ``stable_max_iter`` iterations.

    Only the models still running are evaluated: a model that has stopped costs nothing more, so the cost is the
    sum of the models' own iteration counts.  Every operation acts on each row alone, in an order that does not
    depend on the other rows (elementwise numpy, sums in index order, LAPACK one matrix at a time), so a model's
    iterates are bitwise the same whether it is fitted alone or in any batch.
    """
    x = _stable_start(data, params)
    n_models = x.shape[0]
    damping = np.full(n_models, 1e-3)
    steps = np.zeros(n_models, dtype=np.int64)
    loss, grad_max, newton_step = np.empty(n_models), np.empty(n_models), np.empty(n_models)
    running = np.arange(n_models)
    while True:
        rows, x_run = data.of(running), x[running]
        loss_run, grad, hess = _stable_derivatives(x_run, rows, params)
        test = _newton_test(hess, grad, params)
        stop = (test.step < params.step_tol) | (steps[running] == params.stable_max_iter)
        stopped = running[stop]
        loss[stopped], newton_step[stopped] = loss_run[stop], test.step[stop]
        grad_max[stopped] = np.abs(grad[stop]).max(-1)
        go = ~stop
        if not go.any():
            break
        running, rows, x_run, loss_run = running[go], rows.of(np.flatnonzero(go)), x_run[go], loss_run[go]
        step, ok = _marquardt_step(hess[go], grad[go], damping[running])
        candidate = x_run + step
        accept = ok & (_stable_objective(candidate, rows, params) <= loss_run)
        x_run = np.where(accept[:, None], candidate, x_run)
        damping[running] = np.clip(np.where(accept, damping[running] / 3.0, damping[running] * 10.0), 1e-12, 1e12)
        saddle = np.flatnonzero(~accept & (test.lowest[go] < -params.flat_tol))
        if saddle.size:
            direction = test.direction[go][saddle]
            x_run[saddle] = _leave_saddle(x_run[saddle], loss_run[saddle], direction, rows.of(saddle), params)
        x[running] = x_run
        steps[running] += 1
    point = _StablePoint.of(x, params.chol_diag_floor)
    theta = torch.from_numpy(np.stack([point.theta_text, point.theta_image], -1))
    return _FitOutput(
        theta=theta,
        beta=torch.zeros(n_models, 2, dtype=torch.float64),
        loss=loss,
        steps=steps,
        grad_max=grad_max,
        newton_step=newton_step,
        converged=newton_step < params.step_tol,
    )


def _gap(delta: torch.Tensor, props: torch.Tensor, params: GapScoreParams) -> torch.Tensor:
    """G = σ(logit(|Δ|/(1+|Δ|)) + λ_fail·p00 − λ_succ·p11), on the 0–1 scale."""
    ratio = (delta.abs() / (1.0 + delta.abs())).clamp(params.gap_clip, 1.0 - params.gap_clip)
    p11, p00 = props[..., 0], props[..., 3]
    return torch.sigmoid(torch.logit(ratio) + params.lambda_fail * p00 - params.lambda_succ * p11)


def fit_gap_scores(
    joint_counts: Mapping[str, Mapping[str, Sequence[float]]],
    *,
    variant: Variant = "official",
    params: GapScoreParams | None = None,
    seed: int = 0,
) -> GapScoreResult:
    """Fit the GapEval MIRT model and return per-category and overall gaps (0–100, lower is better).

    ``joint_counts`` maps model -> category -> (n11, n10, n01, n00); counts or proportions both work
    (each cell is normalised; only proportions enter, scaled by ``params.pseudo_count``).  Every model
    must have the same categories; their order is taken from the first model.  ``variant="official"``
    reproduces the authors' float32 AdamW run; ``"stable"`` fixes β = 0 and runs a float64 damped Newton
    method per model to convergence (each model's result is the same alone or in any batch).  The fit draws
    no random numbers; ``seed`` seeds torch inside a forked RNG state.
    """
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
    params = params or GapScoreParams()
    names, categories, props = _proportions(joint_counts)
    counts = _pseudo_counts(props, params.pseudo_count)
    with torch.random.fork_rng(devices=[]), pyro.validation_enabled(False), _single_thread():
        torch.manual_seed(seed)
        if variant == "official":
            fit = _fit_official(_Data(*(t.to(torch.float32) for t in counts)), params)
        else:
            fit = _fit_stable(_StableData(*(t.numpy() for t in counts)), params)
    theta, beta, converged = fit.theta, fit.beta, fit.converged
    delta = theta[..., 0] - theta[..., 1]
    gaps = 100.0 * _gap(delta, props, params)
    models = {}
    for j, name in enumerate(names):
        status = FitStatus(
            variant,
            bool(converged[j]),
            int(fit.steps[j]),
            float(fit.newton_step[j]),
            params.step_tol,
            params.flat_tol,
        )
        cells = {
            c: CategoryGap(
                float(theta[i, j, 0]),
                float(theta[i, j, 1]),
                float(delta[i, j]),
                float(gaps[i, j]),
                bool(converged[j]),
                status,
            )
            for i, c in enumerate(categories)
        }
        models[name] = ModelGap(
            categories=cells,
            overall=float(gaps[:, j].mean()),
            beta_text=float(beta[j, 0]),
            beta_image=float(beta[j, 1]),
            objective=float(fit.loss[j]),
            steps_run=int(fit.steps[j]),
            grad_max=float(fit.grad_max[j]),
            newton_step=float(fit.newton_step[j]),
            converged=bool(converged[j]),
            fit=status,
        )
    result = GapScoreResult(variant, params, categories, models)
    if variant == "stable" and (failed := result.not_converged()):
        warnings.warn(
            f"stable Gap Score fit did not converge within {params.stable_max_iter} iterations for "
            f"{', '.join(failed)}; their gaps are flagged converged=False",
            GapFitNotConverged,
            stacklevel=2,
        )
    return result
