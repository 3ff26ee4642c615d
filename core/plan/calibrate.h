#pragma once
// Calibration of a topology's cost model from a measured step (docs/measure.md, "Calibration").
#include "core/model/topology.h"

#include <cstdint>
#include <string>

namespace routepack {

/// One least-squares fit of seconds = x1 * f1 + x2 * f2 over pieces, both coefficients >= 0.
struct CalibrationFit {
    std::int64_t pieces = 0; ///< pieces that entered the fit (those with tokens)
    double x1 = 0, x2 = 0;   ///< the coefficients (seconds per unit of f1, f2)
    double r2 = 0;           ///< 1 - SS_res / SS_tot around the mean (1 when SS_tot = 0)
    double rel_rms = 0;      ///< sqrt(mean residual^2) / mean seconds
};

/// What `calibrate` fitted and the topology it wrote.
struct Calibration {
    std::int64_t plans = 0;
    CalibrationFit attention; ///< seconds = x1 * tokens + x2 * sum t_i^2 per attention piece
    CalibrationFit experts;   ///< seconds = x1 * invocations + x2 * tokens per experts piece
    double seconds_per_U = 0; ///< experts.x2 * C: the measured machine's seconds per unit of max_g U
    /// The fitted attention totals in cost units (alpha = sum_s alpha_s, beta = sum_s beta_s).
    double alpha = 0, beta = 0;
    double old_alpha = 0, old_beta = 0;     ///< the same sums of the input topology
    std::int64_t invocation_tokens = 0;     ///< experts.x1 / experts.x2, rounded
    std::int64_t old_invocation_tokens = 0; ///< the input topology's
    Topology topology;                      ///< the input with the fitted stages and invocation cost
};

/// Fits a topology's cost model to a measured step (`python3 -m routepack.torch.measure`'s file,
/// format "routepack-measured" version 1, docs/measure.md):
///   attention piece (row, DP slot):  seconds = x1 * tokens + x2 * sq_tokens       (eqs. 11-12)
///   experts piece (row, EDP shard, MoE layer, EP rank): seconds = a_s * experts + b_s * tokens
/// both by least squares with coefficients >= 0 (a negative one is set to 0 and the other refitted),
/// over every plan's pieces that hold tokens. In cost units (the linear expert term keeps its weight
/// 1 per token / C, eq. 14): seconds per U sigma = b_s * C, alpha = x1 / b_s, beta = x2 * C / b_s,
/// expert_invocation_tokens = round(a_s / b_s). With several attention stages (the measured
/// attention of a cell is their sum) each stage's alpha and beta are scaled by the same factor,
/// keeping their shares (a stage set whose sum is 0 gets it all on its first stage). `topology` is the
/// one to calibrate (its C converts the units); everything else in it is kept.
/// InputError naming `origin` and the field: every error of parse_measured (the file's one reader:
/// "m.json: plans[0].pieces[3].seconds is -1, not a finite number >= 0"), a topology without a token
/// cap, fewer than 2 attention or 2 experts pieces with tokens, or experts pieces whose fitted cost
/// per token is 0 (nothing to scale the model by).
Calibration calibrate(const std::string& measured_json, const std::string& origin, const Topology& topology);

} // namespace routepack
