// `routepack place`: LPT placement (Algorithm 1) from expert totals alone, written as an expert map.
#include "app/commands.h"

#include "app/cli_errors.h"
#include "app/cli_int.h"

#include "core/import/import.h"
#include "core/model/topology.h"
#include "core/plan/budgets.h"
#include "core/plan/expert_map.h"
#include "core/plan/score/metrics.h"
#include "core/plan/score/placement.h"
#include "core/plan/search/migration.h"
#include "core/util/errors.h"
#include "core/util/input_file.h"
#include "core/util/json.h"
#include "core/util/text.h"
#include "storage/library.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>

namespace routepack::cli {

namespace {

struct PlaceCmd {
    WindowSource src;
    std::string loads, topology, format = "routepack", out, previous;
    std::int64_t max_moves = -1;
    int ep_ranks = 0;
    bool ep_ranks_given = false;
};

/// Largest --ep-ranks (as a topology file's ep_ranks).
constexpr int kMaxEpRanks = 1 << 20;
/// Reads `--loads FILE` through the importer format "loads" (core/import/import.h): a folder or a
/// file over the loads-file cap refused first, naming the path; the model flags (--moe-layers,
/// --layers, ...) describe what the file leaves out.
std::vector<std::uint64_t> read_loads_file(const std::string& path, const ModelFlags& flags, ModelDescription* model) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) throw InputError(path + ": is a folder, not a loads file");
    (void)check_input_file(path, input_files::kLoadsFile);
    ImportOptions opt;
    opt.format = TraceFormat::Loads;
    opt.model = flags.resolve();
    return import_expert_loads({std::filesystem::path(path)}, opt, model);
}

/// The flags' own checks, before anything is read (UsageError): the map format (returned), --ep-ranks
/// or --topology (one of them), --loads or the trace (not both), and the window flags'
/// (WindowSource::check: --db with --input, --db without --trace, no input at all, the model flags).
ExpertMapFormat check_place_flags(const PlaceCmd& c) {
    const ExpertMapFormat format = as_usage([&] { return parse_expert_map_format(c.format); });
    if (c.ep_ranks_given && !c.topology.empty())
        throw UsageError("place: give either --ep-ranks or --topology, not both");
    if (!c.ep_ranks_given && c.topology.empty()) throw UsageError("place: give --ep-ranks P (or --topology)");
    if (!c.loads.empty() && c.src.given())
        throw UsageError("place: give either --loads FILE or the trace (--db/--input), not both");
    c.src.check(c.loads.empty());
    return format;
}

/// `routepack place`: the placement comparison (compare_placements, the planner's stage 1) from
/// expert totals alone; writes LPT's expert map (with --previous: the placement that starts from the
/// previous one and pays for its moves) and prints identity vs that placement's max/mean rank load
/// per layer and CV_global.
int run_place(const PlaceCmd& c) {
    const ExpertMapFormat format = check_place_flags(c);
    int P = c.ep_ranks;
    std::optional<Topology> topology;
    if (!c.topology.empty()) {
        topology = load_topology(c.topology);
        P = topology->ep_ranks;
    }
    check_output_file(c.out, "--out");
    {
        std::error_code ec;
        if (!c.loads.empty() && std::filesystem::equivalent(c.loads, c.out, ec))
            throw InputError(c.out + ": is the --loads file itself (--out names a new expert map file)");
    }
    ModelDescription model;
    std::vector<std::uint64_t> loads;
    std::string what;
    if (!c.loads.empty()) {
        loads = read_loads_file(c.loads, c.src.model, &model);
        what = c.loads;
    } else if (!c.src.db.empty() && c.src.window.empty()) {
        auto lib = storage::Library::open(c.src.db, storage::OpenMode::ReadOnly);
        model = lib->trace(c.src.trace).model;
        loads = lib->layer_totals(c.src.trace); // aggregate (load-only) traces included
        what = "trace '" + c.src.trace + "'";
    } else if (!c.src.inputs.empty() && c.src.db.empty()) {
        // Files read straight: summed sample by sample, or an aggregate file's totals as they are.
        ImportOptions opt;
        opt.format = parse_trace_format(c.src.format);
        opt.router_layer_base = parse_layer_base(c.src.layer_base);
        opt.model = c.src.model.resolve();
        const std::vector<std::filesystem::path> paths(c.src.inputs.begin(), c.src.inputs.end());
        loads = import_expert_loads(paths, opt, &model);
        what = c.src.inputs.size() == 1 ? c.src.inputs.front() : std::to_string(c.src.inputs.size()) + " inputs";
    } else {
        std::string tn, wn;
        const Trace w = c.src.load(&tn, &wn);
        model = w.model;
        loads = aggregate_expert_loads(w.counts, w.size(), model.num_moe_layers(), model.experts);
        what = (wn.empty() ? "trace '" + tn + "'" : "window '" + wn + "' of '" + tn + "'") + " (" +
               std::to_string(w.size()) + " samples)";
    }
    const int L = model.num_moe_layers(), E = model.experts;
    // A topology file is checked as the planner checks it (experts_per_layer too), naming the file.
    if (topology) check_topology_for_model(*topology, model, topology_origin(c.topology));
    if (E % P != 0)
        throw InputError("topology: " + std::to_string(E) + " experts are not divisible by " + std::to_string(P) +
                         " EP ranks");
    const PlacementComparison cmp = compare_placements(loads, L, E, P);
    const auto mi = rank_max_over_mean(cmp.rank_loads_identity, L, P);
    auto ml = rank_max_over_mean(cmp.rank_loads_lpt, L, P);
    double cv_placed = cmp.cv_lpt;
    Placement placed = cmp.lpt;
    std::optional<Placement> previous;
    MigrationCost cost;
    if (!c.previous.empty()) {
        previous = read_previous_placement(c.previous, model, P);
        MoveRequest rq;
        rq.previous = &*previous;
        rq.max_moves = c.max_moves;
        if (topology && topology->has_migration) {
            cost = resolve_migration_cost(*topology, model);
            rq.cost = &cost;
            rq.tokens_per_U = static_cast<double>(topology->token_cap) * topology->shards();
        }
        placed = place_from_previous(loads, cmp.lpt, rq).placement;
        const std::vector<std::uint64_t> placed_loads = rank_loads(loads, placed);
        ml = rank_max_over_mean(placed_loads, L, P);
        cv_placed = cv_global(placed_loads, L, P);
    } else if (c.max_moves >= 0) {
        std::cout << "note: no previous placement: --max-moves is ignored (the placement is LPT's)\n";
    }
    const std::string text = expert_map_json(placed, model, format);
    write_output(c.out, text, "expert map");
    std::cout << "placement of " << what << ": " << L << " MoE layers x " << E << " experts on " << P
              << (previous ? " EP ranks (from the previous placement, paying for its moves)\n"
                           : " EP ranks (LPT, Algorithm 1)\n");
    std::printf("%7s %14s %14s\n", "layer", "identity max/mean", previous ? "placed max/mean" : "LPT max/mean");
    double si = 0, sl = 0;
    for (std::size_t l = 0; l < mi.size(); ++l) {
        std::printf("%7d %17.4f %14.4f\n", model.moe_layers[l], mi[l], ml[l]);
        si += mi[l];
        sl += ml[l];
    }
    std::printf("%7s %17.4f %14.4f\n", "mean", L ? si / L : 1.0, L ? sl / L : 1.0);
    std::fflush(stdout);
    std::cout << "CV_global: identity " << fmt("%.4f", cmp.cv_identity)
              << (previous ? " -> placed " + fmt("%.4f", cv_placed) + " (LPT alone " + fmt("%.4f", cmp.cv_lpt) + ")"
                           : " -> LPT " + fmt("%.4f", cmp.cv_lpt))
              << "\n";
    if (previous) {
        const MigrationFigures f = migration_figures(placed, *previous, cost);
        std::cout << "experts moved from the previous placement: " << f.moved << " of "
                  << static_cast<std::int64_t>(L) * E << " (budget "
                  << (c.max_moves >= 0 ? std::to_string(c.max_moves) : std::string("unlimited")) << ")";
        if (cost.expert_bytes > 0)
            std::cout << ", " << fmt("%.3f", f.bytes / 1e9) << " GB, materialization " << fmt("%.4f", f.seconds)
                      << " s ("
                      << (f.busiest_rank >= 0 ? "busiest EP rank " + std::to_string(f.busiest_rank)
                                              : std::string("no expert moves"))
                      << ")";
        std::cout << "\n";
    }
    std::cout << "expert map (" << c.format << ") written to " << c.out << "\n";
    return 0;
}

} // namespace

Command register_place(CLI::App& app) {
    auto c = std::make_shared<PlaceCmd>();
    auto* place = app.add_subcommand("place", "LPT placement from expert totals alone (a trace, window, aggregate "
                                              "trace or --loads FILE); writes an expert map");
    place->add_option("--db", c->src.db, "library file");
    place->add_option("--trace", c->src.trace, "trace name in the library (aggregate traces too)");
    place->add_option("--window", c->src.window, "window name (default: the whole trace)");
    place->add_option("--input", c->src.inputs, "trace files or folders read straight (no library)");
    place->add_option("--input-format", c->src.format, "format of --input (default auto)");
    add_layer_base_option(*place, c->src.layer_base);
    c->src.model.add(*place);
    place->add_option("--loads", c->loads,
                      "JSON [L][E] expert loads, or {\"loads\", \"moe_layers\", \"num_hidden_layers\"}");
    add_int_option(*place, "--ep-ranks", c->ep_ranks, "EP ranks P", 1, kMaxEpRanks, &c->ep_ranks_given);
    place->add_option("--topology", c->topology, "take P from a topology file or shipped name");
    place->add_option("--previous", c->previous,
                      "the previous step's placement (a plan file or an expert map file, as rewrite --map reads): "
                      "the placement starts there and pays for its moves");
    add_int_option(*place, "--max-moves", c->max_moves,
                   "experts moved from --previous, summed over MoE layers, at most (default: unlimited)",
                   std::int64_t{0}, kMaxMoves);
    place->add_option("--format", c->format, "routepack (default), sglang, vllm");
    place->add_option("--out", c->out, "expert map file to write")->required();
    return {place, [c] { return run_place(*c); }};
}

} // namespace routepack::cli
