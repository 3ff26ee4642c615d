#pragma once
// The measured step file (`python3 -m routepack.torch.measure --out`, docs/measure.md "The measured
// file"): its one reader, for calibration, the library's import and Python's read_measured.
#include "core/model/topology.h"
#include "core/model/trace.h"
#include "core/plan/score/packing.h"
#include "core/plan/score/placement.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace routepack {

/// One timed piece of a measured step.
struct MeasuredPiece {
    bool attention = false;     ///< kind "attention" (else "experts")
    int row = 0;                ///< r
    int dp_slot = -1;           ///< d (attention)
    int edp_shard = -1;         ///< g (experts; the DP slot's shard for attention)
    int moe_layer = -1;         ///< absolute MoE layer id (experts)
    int ep_rank = -1;           ///< p (experts)
    std::int64_t samples = 0;   ///< samples of the cell (attention)
    std::int64_t tokens = 0;    ///< tokens of the cell, or routed to the rank's experts
    std::int64_t sq_tokens = 0; ///< sum t_i^2 of the cell (attention)
    std::int64_t experts = 0;   ///< the rank's experts with tokens (experts)
    double modelled = 0;        ///< the cost model's cost of the piece (units of C)
    double seconds = 0;         ///< measured (median thread CPU time, or of the profiler's ranges)
};

/// One plan's measured step.
struct MeasuredPlan {
    std::string name;
    std::string layout_digest; ///< as the file states it ("" for a plan imported from a profiler trace)
    int rows = 0;
    std::optional<double> modelled_max_u;
    double step_seconds = 0;
    std::vector<MeasuredPiece> pieces;
};

/// A measured step file, checked.
struct MeasuredStep {
    std::string trace, window, fingerprint; ///< the window measured (Window.fingerprint)
    std::int64_t samples = 0, experts = 0;
    std::vector<int> moe_layers; ///< absolute ids, ascending
    Topology topology;           ///< the topology it was measured under
    std::string shapes;          ///< the "shapes" object as JSON text, "null" when not known (a profiler trace)
    std::string timing;          ///< the "timing" object as JSON text
    std::vector<MeasuredPlan> plans;
};

/// The pieces of one layout of a window, as routepack.torch.measure records them and in its order:
/// for each row r, each DP slot d's attention piece (samples, tokens, sq_tokens of cell (r, d);
/// modelled = sum over the topology's attention stages of alpha t / C + beta sq / C^2), then for each
/// EDP shard g, MoE layer l (window order) and EP rank p, the experts piece: the experts of rank p
/// at `placement` that the shard's samples of row r route tokens to (experts), their tokens, and
/// modelled = (tokens + expert_invocation_tokens * experts) / C. Seconds are 0 and modelled_max_u
/// is unset. `window` is [N] lengths and [N][L][E] counts, `layout` R x D cells of its sample
/// indices, `placement` its [L][E] slots; C is topology.token_cap (> 0). std::invalid_argument when
/// the shapes disagree (checked by the callers' readers first).
MeasuredPlan layout_pieces(const Trace& window, const Layout& layout, const Placement& placement,
                           const Topology& topology, const std::string& name);

/// Whether two plans measured the same layout: the same rows and, piece by piece in identity
/// order, the same samples, tokens, sq_tokens and experts (seconds and modelled costs aside).
bool same_pieces(const MeasuredPlan& a, const MeasuredPlan& b);

/// Writes a measured step in the measured file's format (docs/measure.md "The measured file";
/// 2-space indent, no final newline): what parse_measured reads back field for field. The pieces'
/// and steps' measured.shard_seconds and row_shard_seconds are composed as compose_measured does.
std::string measured_to_json(const MeasuredStep& m);

/// The step time of a plan from its pieces' seconds, by the step's synchronization:
/// J[r][g] = max_{d in g} attention[r][d] + sum_l max_p experts[r][g][l][p] (layers in `moe_layers`
/// order, a left fold from the attention), U_g = sum_r J[r][g] (rows in order), step = max_g U_g;
/// the same operations in the same order as routepack.torch.measure.compose, so the same bits.
double compose_measured(const MeasuredPlan& plan, const Topology& topology, const std::vector<int>& moe_layers);

/// Reads and checks a measured step file's text (`shapes` may be null: a step imported from a profiler trace); `origin`
/// (the file) prefixes every error. Checks the format ("routepack-measured") and version (1); the window (and, when
/// `fingerprint` is not empty, that it is that window: "<origin>: window.fingerprint is X, the window's is Y: a
/// measurement of another window"); the topology (the topology file's rules: "<origin>: topology is not a valid
/// topology (...)"); the shapes and timing; every plan's pieces: each field in range (seconds finite
/// and >= 0; row, DP slot, EDP shard and EP rank inside the topology; a MoE layer of the window),
/// every attention piece (row, DP slot) and experts piece (row, EDP shard, MoE layer, EP rank)
/// present exactly once ("<origin>: plans[0] has no experts piece for row 1, EDP shard 1, MoE layer
/// 2, EP rank 1", "<origin>: plans[0].pieces[9] repeats the attention piece of row 0"), and
/// measured.step_seconds equal to what the pieces compose to (compose_measured). InputError naming
/// the field otherwise ("<origin>: plans[0].pieces[3].seconds is -1, not a finite number >= 0").
MeasuredStep parse_measured(const std::string& text, const std::string& origin, const std::string& fingerprint = {});

} // namespace routepack
