#include "core/plan/calibrate.h"

#include "core/plan/measured.h"
#include "core/util/errors.h"

#include <cmath>
#include <limits>
#include <vector>

namespace routepack {

namespace {

/// The pieces of one kind: two features and the seconds, per piece.
struct Samples {
    std::vector<double> f1, f2, y;
};

/// Residual sum of squares of y - x1 f1 - x2 f2.
double residual_ss(const Samples& s, double x1, double x2) {
    double ss = 0;
    for (std::size_t k = 0; k < s.y.size(); ++k) {
        const double r = s.y[k] - x1 * s.f1[k] - x2 * s.f2[k];
        ss += r * r;
    }
    return ss;
}

/// Least squares with x1, x2 >= 0: the unconstrained solution when both are >= 0, else the better of
/// the two one-coefficient fits. The features are scaled to unit RMS first (sum t^2 is many orders
/// of magnitude above sum t).
CalibrationFit fit_nonnegative(const Samples& s) {
    CalibrationFit f;
    f.pieces = static_cast<std::int64_t>(s.y.size());
    const double n = static_cast<double>(s.y.size());
    double r1 = 0, r2 = 0;
    for (std::size_t k = 0; k < s.y.size(); ++k) {
        r1 += s.f1[k] * s.f1[k];
        r2 += s.f2[k] * s.f2[k];
    }
    r1 = r1 > 0 ? std::sqrt(r1 / n) : 1.0;
    r2 = r2 > 0 ? std::sqrt(r2 / n) : 1.0;
    double a11 = 0, a12 = 0, a22 = 0, b1 = 0, b2 = 0;
    for (std::size_t k = 0; k < s.y.size(); ++k) {
        const double g1 = s.f1[k] / r1, g2 = s.f2[k] / r2;
        a11 += g1 * g1;
        a12 += g1 * g2;
        a22 += g2 * g2;
        b1 += g1 * s.y[k];
        b2 += g2 * s.y[k];
    }
    double x1 = -1, x2 = -1;
    const double det = a11 * a22 - a12 * a12;
    if (det > 1e-12 * a11 * a22) {
        x1 = (b1 * a22 - b2 * a12) / det;
        x2 = (a11 * b2 - a12 * b1) / det;
    }
    if (!(x1 >= 0 && x2 >= 0)) {
        const double only1 = a11 > 0 ? std::max(0.0, b1 / a11) : 0.0;
        const double only2 = a22 > 0 ? std::max(0.0, b2 / a22) : 0.0;
        const bool first = residual_ss(s, only1 / r1, 0) <= residual_ss(s, 0, only2 / r2);
        x1 = first ? only1 : 0.0;
        x2 = first ? 0.0 : only2;
    }
    f.x1 = x1 / r1;
    f.x2 = x2 / r2;
    double mean = 0;
    for (double y : s.y)
        mean += y;
    mean /= n;
    double tot = 0;
    for (double y : s.y)
        tot += (y - mean) * (y - mean);
    const double res = residual_ss(s, f.x1, f.x2);
    f.r2 = tot > 0 ? 1.0 - res / tot : 1.0;
    f.rel_rms = mean > 0 ? std::sqrt(res / n) / mean : 0.0;
    return f;
}

/// Every plan's pieces with tokens into the two sample sets.
void collect_pieces(const MeasuredStep& m, Samples& att, Samples& exp) {
    for (const MeasuredPlan& plan : m.plans)
        for (const MeasuredPiece& pc : plan.pieces) {
            if (pc.tokens == 0) continue;
            Samples& s = pc.attention ? att : exp;
            s.f1.push_back(static_cast<double>(pc.attention ? pc.tokens : pc.experts));
            s.f2.push_back(static_cast<double>(pc.attention ? pc.sq_tokens : pc.tokens));
            s.y.push_back(pc.seconds);
        }
}

/// Scales the stages' alpha (beta) to the total `target`, keeping their shares.
void scale_stages(std::vector<AttentionStage>& stages, double target, double old_total, bool alpha) {
    for (std::size_t s = 0; s < stages.size(); ++s) {
        double& v = alpha ? stages[s].alpha : stages[s].beta;
        if (old_total > 0)
            v = v * (target / old_total);
        else
            v = s == 0 ? target : 0.0;
    }
}

} // namespace

Calibration calibrate(const std::string& measured_json, const std::string& origin, const Topology& topology) {
    const MeasuredStep m = parse_measured(measured_json, origin);
    if (topology.token_cap <= 0)
        throw InputError(origin + ": the topology has no token cap C, which the cost units are taken in");
    Calibration c;
    c.plans = static_cast<std::int64_t>(m.plans.size());
    Samples att, exp;
    collect_pieces(m, att, exp);
    if (att.y.size() < 2 || exp.y.size() < 2)
        throw InputError(origin + ": " + std::to_string(att.y.size()) + " attention and " +
                         std::to_string(exp.y.size()) + " experts pieces with tokens; a fit needs at least 2 of each");
    c.attention = fit_nonnegative(att);
    c.experts = fit_nonnegative(exp);
    double mean_tokens = 0, mean_seconds = 0;
    for (std::size_t k = 0; k < exp.y.size(); ++k) {
        mean_tokens += exp.f2[k];
        mean_seconds += exp.y[k];
    }
    // A per-token part below 1e-9 of the pieces' time is a rounding residue, not a cost per token.
    if (!(c.experts.x2 * mean_tokens > 1e-9 * mean_seconds))
        throw InputError(origin + ": the experts pieces fit no cost per token (their seconds do not grow with "
                                  "tokens), so the model has nothing to scale by");
    const double C = static_cast<double>(topology.token_cap);
    const double b = c.experts.x2;
    c.seconds_per_U = b * C;
    c.alpha = c.attention.x1 / b;
    c.beta = c.attention.x2 * C / b;
    for (const auto& s : topology.attention_stages) {
        c.old_alpha += s.alpha;
        c.old_beta += s.beta;
    }
    const double inv = std::round(c.experts.x1 / b);
    c.invocation_tokens = static_cast<std::int64_t>(std::min(inv, static_cast<double>(kMaxInvocationTokens)));
    c.old_invocation_tokens = topology.expert_invocation_tokens;
    c.topology = topology;
    scale_stages(c.topology.attention_stages, c.alpha, c.old_alpha, true);
    scale_stages(c.topology.attention_stages, c.beta, c.old_beta, false);
    c.topology.expert_invocation_tokens = c.invocation_tokens;
    return c;
}

} // namespace routepack
