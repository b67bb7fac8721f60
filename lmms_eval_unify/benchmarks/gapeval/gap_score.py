"""GapEval "Gap Score": a two-dimensional IRT (MIRT) model fitted by MAP with pyro.

Each model (UMM) is fitted on its own: one ability pair (θ_text, θ_image) per category, a difficulty
pair β shared by the categories, and a Gaussian prior N(μ, LLᵀ) over the category abilities with
learned μ and Cholesky factor L.  The per-category gap is

    G_c = σ(logit(|Δ_c| / (1 + |Δ_c|)) + λ_fail·p00_c − λ_succ·p11_c),   Δ_c = θ_text,c − θ_image,c,

reported on a 0–100 scale (lower is better); the overall gap is the unweighted mean over categories.
See ``docs/gap_score.md`` for the two variants (``official`` and ``stable``) and why they differ.

All models and categories are fitted in one batched pyro model: every term of the objective is a sum
of per-model terms, so the batched fit equals independent per-model fits.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Literal, NamedTuple, cast

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
    ``stable_max_iter`` and ``step_tol`` drive the ``stable`` Newton run; ``step_tol`` also sets the
    ``converged`` flag of both variants.
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
    stable_max_iter: int = 500
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
class CategoryGap:
    """Fitted abilities and gap of one (model, category) cell; ``gap`` is on the 0–100 scale.

    ``converged`` is the flag of the model's fit, which all its cells share (one joint fit per model).
    """

    theta_text: float
    theta_image: float
    delta: float
    gap: float
    converged: bool


@dataclass(frozen=True)
class ModelGap:
    """Per-model result: category cells, overall gap (0–100) and fit diagnostics.

    ``objective`` is the spec's MAP objective J (pyro's negative log joint without the prior's 2π
    constant): for ``official`` the lowest pre-step J (the authors' selection rule; θ is the iterate
    right after that step), for ``stable`` J at the returned point.  ``grad_max`` (max |∇J|) and
    ``newton_step`` (max |H⁻¹∇J|, inf where the Hessian H is not positive definite) are taken at the
    optimiser's last iterate; ``converged`` is ``newton_step < step_tol``: a local minimum, with every
    parameter within about ``step_tol`` of it.
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
    """Optimiser result per model: flat parameters, J, iterations, max |∇J| and max |full Newton step|."""

    x: torch.Tensor
    loss: torch.Tensor
    steps: torch.Tensor
    grad_max: torch.Tensor
    newton_step: torch.Tensor


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


def _floored_cholesky(lower: torch.Tensor, floor: float) -> torch.Tensor:
    """Cholesky factor of floor²·I + LLᵀ (``stable``): every eigenvalue of the prior covariance is ≥ floor²."""
    eye = torch.eye(2, dtype=lower.dtype)
    return torch.linalg.cholesky(floor**2 * eye + lower @ lower.transpose(-1, -2))


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
    """How one row of the flat (models, P) optimisation tensor maps to the parameters.

    ``official``: [θ (C·2), β (2), μ (2), lower triangle of L_raw (3)], prior scale K = L (the authors'
    factor: tril(L_raw) with diagonal softplus + floor).
    ``stable``: [z (C·2), μ (2), lower triangle of L (3)] with β ≡ 0, prior covariance floor²·I + LLᵀ,
    K its Cholesky factor and θ_c = μ + K z_c (whitened coordinates: no funnel between θ and a shrinking K).
    """

    n_cat: int
    stable: bool

    def pack(
        self, theta: torch.Tensor, beta: torch.Tensor, mu: torch.Tensor, chol_raw: torch.Tensor, floor: float
    ) -> torch.Tensor:
        """The flat (models, P) tensor of (θ, β, μ, L_raw); ``stable`` starts from L = the authors' factor."""
        first, factor = theta, chol_raw
        if self.stable:
            factor = _cholesky(chol_raw, floor)
            scale_tril = _floored_cholesky(factor, floor)
            first = torch.linalg.solve_triangular(scale_tril, (theta - mu)[..., None], upper=False)[..., 0]
        parts = [first.transpose(0, 1).reshape(theta.shape[1], -1)]
        parts += [mu] if self.stable else [beta, mu]
        return torch.cat(parts + [factor[:, [0, 1, 1], [0, 0, 1]]], dim=-1)

    def unpack(self, x: torch.Tensor, floor: float) -> tuple[torch.Tensor, ...]:
        """(θ, β, μ, K) from the flat tensor, K the prior's scale_tril."""
        n_models, width = x.shape[0], 2 * self.n_cat
        first = x[:, :width].reshape(n_models, self.n_cat, 2).transpose(0, 1)
        beta = torch.zeros(n_models, 2, dtype=x.dtype) if self.stable else x[:, width : width + 2]
        mu = x[:, -5:-3]
        l00, l10, l11 = x[:, -3:].unbind(-1)
        factor = torch.stack([torch.stack([l00, torch.zeros_like(l00)], -1), torch.stack([l10, l11], -1)], -2)
        if not self.stable:
            return first, beta, mu, _cholesky(factor, floor)
        scale_tril = _floored_cholesky(factor, floor)
        return mu + (scale_tril @ first[..., None])[..., 0], beta, mu, scale_tril


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
    data: _Data, params: GapScoreParams, dtype: torch.dtype
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Logit initialisation: θ = logit(observed rates), β = 0, μ = mean θ, L_raw = chol_init."""
    clip = params.init_clip
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


def _fit_official(objective: _Objective, x0: torch.Tensor, params: GapScoreParams) -> _FitOutput:
    """AdamW for a fixed number of steps; keep the iterate after the step with the lowest pre-step loss."""
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
    newton, _, _ = _newton_step_size(_batched_hessian(grad, x).detach(), grad.detach(), params.flat_tol)
    steps = torch.full((x0.shape[0],), params.steps)
    return _FitOutput(best_x, best_loss.detach(), steps, grad.detach().abs().amax(-1), newton)


def _batched_hessian(grad: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """Per-model Hessian blocks (M, P, P), one Hessian-vector product per coordinate."""
    columns = [torch.autograd.grad(grad[:, k].sum(), x, retain_graph=True)[0] for k in range(x.shape[1])]
    return torch.stack(columns, dim=-1)


def _newton_step_size(
    hess: torch.Tensor, grad: torch.Tensor, flat: float
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per model max |H⁺∇J|, the full Newton step with directions of curvature ≤ ``flat`` left out; inf at a
    saddle (curvature < −``flat``) or where ∇J along a left-out direction exceeds ``flat``.

    A left-out direction is one along which J is flat to ``flat``: the prior's Cholesky factor L is not
    unique where LLᵀ is singular (e.g. a modality whose category abilities coincide), and no θ depends on it.
    Also returns each model's lowest curvature and its direction (for leaving a saddle).
    """
    curvature, directions = torch.linalg.eigh(hess)
    along = (directions.transpose(-1, -2) @ grad[..., None])[..., 0]
    curved = curvature > flat
    step = directions @ torch.where(curved, along / torch.where(curved, curvature, 1.0), 0.0)[..., None]
    stationary = (curvature >= -flat).all(-1) & (along.abs() <= flat).logical_or(curved).all(-1)
    return torch.where(stationary, step[..., 0].abs().amax(-1), math.inf), curvature[:, 0], directions[..., 0]


def _marquardt_step(hess: torch.Tensor, grad: torch.Tensor, damping: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Solve (H + λ·diag|H|) d = −g per model; also return whether the system was positive definite."""
    scale = torch.diagonal(hess, dim1=-2, dim2=-1).abs().clamp_min(1e-8)
    factor, info = torch.linalg.cholesky_ex(hess + torch.diag_embed(damping[:, None] * scale))
    ok = info == 0
    eye = torch.eye(grad.shape[1], dtype=grad.dtype)
    step = -torch.cholesky_solve(grad[..., None], torch.where(ok[:, None, None], factor, eye))[..., 0]
    return torch.where(ok[:, None], step, 0.0), ok


def _leave_saddle(
    objective: _Objective,
    x: torch.Tensor,
    loss: torch.Tensor,
    direction: torch.Tensor,
    at_saddle: torch.Tensor,
) -> torch.Tensor:
    """Move the models ``at_saddle`` along their negative-curvature direction (either sign, lengths 1 to 1e-4)
    to the candidate with the lowest J, if it is lower than ``loss``; damped Newton steps cannot leave a saddle
    whose gradient is zero (e.g. a triangular L with L₀₀ = L₁₀ = 0, symmetric under their joint sign flip)."""
    best_x, best_loss = x, torch.where(at_saddle, loss, -math.inf)
    for length in (1.0, -1.0, 1e-1, -1e-1, 1e-2, -1e-2, 1e-4, -1e-4):
        candidate = x + length * direction
        trial = objective(candidate)
        better = trial < best_loss
        best_x = torch.where(better[:, None], candidate, best_x)
        best_loss = torch.where(better, trial, best_loss)
    return best_x


def _fit_stable(objective: _Objective, x0: torch.Tensor, params: GapScoreParams) -> _FitOutput:
    """Batched Levenberg–Marquardt (damped Newton), each model until its full Newton step is below ``step_tol``.

    A model stops (its row is frozen) once converged, so the batched fit equals separate fits.  The test is
    on the Newton step, not on |∇J|: where the optimum sits on the covariance floor the curvature is ~1/floor²,
    and a gradient that float rounding of J cannot reduce further still means a step of ~1e-12.
    """
    n_models = x0.shape[0]
    x, damping = x0, torch.full((n_models,), 1e-3, dtype=x0.dtype)
    steps, iteration = torch.zeros(n_models, dtype=torch.long), 0
    while True:
        x, loss, grad = _per_model_grad(objective, x, create_graph=True)
        hess, grad = _batched_hessian(grad, x).detach(), grad.detach()
        newton, lowest, direction = _newton_step_size(hess, grad, params.flat_tol)
        done = newton < params.step_tol
        if iteration == params.stable_max_iter or bool(done.all()):
            return _FitOutput(x.detach(), loss.detach(), steps, grad.abs().amax(-1), newton)
        step, ok = _marquardt_step(hess, grad, damping)
        with torch.no_grad():
            accept = ok & ~done & (objective(x + step) <= loss)
            x = torch.where(accept[:, None], x + step, x)
            damping = torch.where(accept, damping / 3.0, damping * 10.0).clamp(1e-12, 1e12)
            at_saddle = ~accept & ~done & (lowest < -params.flat_tol)
            if bool(at_saddle.any()):
                x = _leave_saddle(objective, x, loss, direction, at_saddle)
        steps += ~done
        iteration += 1


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
    method to convergence.  The fit draws no random numbers; ``seed`` seeds torch inside a forked RNG state.
    """
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
    params = params or GapScoreParams()
    names, categories, props = _proportions(joint_counts)
    dtype = torch.float32 if variant == "official" else torch.float64
    data = _Data(*(t.to(dtype) for t in _pseudo_counts(props, params.pseudo_count)))
    layout = _Layout(n_cat=len(categories), stable=variant == "stable")
    with torch.random.fork_rng(devices=[]), pyro.validation_enabled(False), _single_thread():
        torch.manual_seed(seed)
        x0 = layout.pack(*_initial_state(data, params, dtype), params.chol_diag_floor)
        objective = _flat_objective(data, params, layout, x0)
        fit = _fit_official if variant == "official" else _fit_stable
        x, loss, steps, grad_max, newton_step = fit(objective, x0, params)
        theta, beta, _, _ = layout.unpack(x, params.chol_diag_floor)
    theta, beta = theta.double(), beta.double()
    delta = theta[..., 0] - theta[..., 1]
    gaps = 100.0 * _gap(delta, props, params)
    converged = newton_step < params.step_tol
    models = {}
    for j, name in enumerate(names):
        cells = {
            c: CategoryGap(
                float(theta[i, j, 0]),
                float(theta[i, j, 1]),
                float(delta[i, j]),
                float(gaps[i, j]),
                bool(converged[j]),
            )
            for i, c in enumerate(categories)
        }
        models[name] = ModelGap(
            categories=cells,
            overall=float(gaps[:, j].mean()),
            beta_text=float(beta[j, 0]),
            beta_image=float(beta[j, 1]),
            objective=float(loss[j]),
            steps_run=int(steps[j]),
            grad_max=float(grad_max[j]),
            newton_step=float(newton_step[j]),
            converged=bool(converged[j]),
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
