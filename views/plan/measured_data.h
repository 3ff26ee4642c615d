#pragma once
// What the plan views' measured mode draws, computed without widgets: a measured plan's seconds per
// (MoE layer, EP rank) and per row-shard beside the cost model's, and the measured plans of a saved
// run found in the library (docs/measure.md "In the library").
#include "core/plan/measured.h"
#include "core/plan/method.h"
#include "storage/library.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace routepack::views {

/// One measured plan the measured mode can show.
struct MeasuredChoice {
    std::shared_ptr<const MeasuredStep> step; ///< the stored measured file, read back
    int plan = 0;                             ///< index into step->plans
    std::int64_t measured_id = 0;             ///< storage::MeasuredStepEntry::id
    std::string source;                       ///< "measured" or "profiler"
    std::string method;                       ///< the run's method whose layout it ran ("" when not linked)
};

/// A measured plan's figures beside the cost model's, from its pieces (seconds, and each piece's
/// modelled cost in units of C), composed as the step synchronizes (compose_measured).
struct MeasuredFigures {
    int rows = 0, shards = 0, layers = 0, ranks = 0; ///< R, G, L, P
    std::vector<int> moe_layers;                     ///< absolute ids [L]
    /// [L][P] experts seconds, modelled cost and tokens of (MoE layer, EP rank), summed over the row-shards.
    std::vector<double> rank_seconds, rank_modelled;
    std::vector<std::int64_t> rank_tokens;
    /// [R][G]: max over the shard's DP slots of the attention pieces (A), the sum over MoE layers of
    /// the busiest rank's experts piece (E), measured and modelled; J = A + E added as
    /// compose_measured adds it (A, then each layer in turn).
    std::vector<double> attention, experts, modelled_attention, modelled_experts, joint, modelled_joint;
    std::vector<double> shard_seconds, shard_modelled; ///< U[g] [G], measured and modelled
    double step_seconds = 0, modelled_step = 0;        ///< max_g U
    int straggler = 0, modelled_straggler = 0;         ///< argmax_g (lowest g on ties)
};

/// The figures of plan `plan` of `m`. std::out_of_range for a plan index outside m.plans.
MeasuredFigures measured_figures(const MeasuredStep& m, int plan);

/// The measured plans of saved run `run` (of window `trace`/`window`): every plan of every measured
/// step of that window that the library linked to the run, oldest step first, each step's plans in
/// file order. Reads each such step's stored file (Library::measured_step); empty for a library
/// without measured steps (a read-only open of an older schema). InputError as the library's reads.
std::vector<MeasuredChoice> run_measured_choices(const storage::Library& lib, const std::string& trace,
                                                 const std::string& window, std::int64_t run);

/// The measured step seconds of each method of saved run `run` among the library's measured steps
/// `steps` (Library::measured_steps, oldest first): of the latest step that the library linked to that
/// method's layout. Methods never measured stay empty.
PerMethod<std::optional<double>> run_measured_seconds(const std::vector<storage::MeasuredStepEntry>& steps,
                                                      std::int64_t run);
/// Whether any of `steps` has a plan linked to saved run `run`.
bool run_was_measured(const std::vector<storage::MeasuredStepEntry>& steps, std::int64_t run);

} // namespace routepack::views
