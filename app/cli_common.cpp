#include "app/cli_common.h"

#include "app/cli_errors.h"
#include "app/cli_int.h"

#include "core/import/import.h"
#include "core/model/topology.h"
#include "core/plan/budgets.h"
#include "core/plan/expert_map.h"
#include "core/plan/plan_stage.h"
#include "core/util/atomic_file.h"
#include "core/util/errors.h"
#include "core/util/input_file.h"
#include "core/util/json.h"
#include "core/util/text.h"
#include "storage/library.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <charconv>
#include <csignal>
#include <filesystem>
#include <limits>
#include <type_traits>
#include <unistd.h>
#include <unordered_map>
#include <variant>

namespace routepack::cli {

namespace {

std::atomic<bool> g_cancel{false};
extern "C" void on_sigint(int) {
    g_cancel.store(true);
}

/// "a, b, c" of `names`.
std::string joined(const std::vector<std::string>& names) {
    std::string s;
    for (const auto& n : names)
        s += (s.empty() ? "" : ", ") + n;
    return s;
}

} // namespace

void catch_sigint() {
    std::signal(SIGINT, on_sigint);
    std::signal(SIGTERM, on_sigint);
    std::signal(SIGHUP, on_sigint);
}

std::atomic<bool>& sigint_flag() {
    return g_cancel;
}

std::string fmt(const char* f, double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, f, v);
    return buf;
}

std::string human_bytes(std::uint64_t b) {
    if (b >= (1ull << 20)) return fmt("%.1f MiB", b / 1048576.0);
    if (b >= 1024) return fmt("%.1f KiB", b / 1024.0);
    return std::to_string(b) + " B";
}

std::string shown(const std::string& s) {
    return util::printable(s);
}

std::string shown_path(const std::string& s) {
    return util::printable(s, s.size());
}

void check_db_path(const std::string& db) {
    if (db.empty() || db == ":memory:")
        throw UsageError("--db must be a file path (got '" + util::printable(db) + "')");
}

void check_output_file(const std::string& out, const char* flag) {
    std::error_code ec;
    const auto st = std::filesystem::status(out, ec);
    if (std::filesystem::is_directory(st))
        throw InputError(out + ": is a folder (" + flag + " names the file to write)");
    if (std::filesystem::exists(st) && !std::filesystem::is_regular_file(st))
        throw InputError(out + ": not a regular file (" + flag + " names the file to write)");
}

void write_output(const std::string& out, const std::string& text, const char* what) {
    try {
        util::write_file_atomically(out, text + "\n");
    } catch (const util::AtomicWriteError& e) {
        throw InputError(out + ": cannot write " + what + " (" + e.what() + ")");
    }
}

std::uint64_t parse_seed(const std::string& text, const std::string& command) {
    return parse_int_flag<std::uint64_t>(text, command + ": --seed", 0, std::numeric_limits<std::uint64_t>::max(),
                                         "an integer in 0..18446744073709551615");
}

void ModelFlags::add(CLI::App& app) {
    app.add_option("--model", model, "shipped model description (" + joined(known_model_names()) + ")");
    app.add_option("--model-config", model_config, "Hugging Face config.json of the model");
    // 0, the default, is "not given": the model's own value stays.
    const auto count = [&app](const std::string& flag, int& target, const std::string& help, int hi) {
        add_int_option(app, flag, target, help, 0, hi, nullptr, "an integer in 1.." + std::to_string(hi));
    };
    count("--experts", experts, "routed experts per MoE layer (E)", kMaxExperts);
    count("--top-k", top_k, "experts per token (k)", kMaxTopK);
    count("--layers", layers, "decoder layers (num_hidden_layers)", kMaxHiddenLayers);
    app.add_option("--moe-layers", moe_layers, "absolute MoE layer ids, e.g. 1-26 or 1-47:2 or 0,2,4");
}

void ModelFlags::check() const {
    if (!model.empty() && !model_config.empty()) throw UsageError("give either --model or --model-config, not both");
    if (!model.empty()) as_usage([&] { (void)known_model(model); });
    if (!moe_layers.empty()) as_usage([&] { (void)parse_layer_list(moe_layers); });
}

ModelDescription ModelFlags::resolve() const {
    check();
    const bool given = !model.empty() || !model_config.empty();
    ModelDescription m;
    if (!model.empty()) m = known_model(model);
    if (!model_config.empty()) {
        m = model_from_hf_config(read_input_file(model_config, input_files::kModelConfig), model_config);
    }
    if (experts) m.experts = experts;
    if (top_k) m.top_k = top_k;
    if (layers) m.num_hidden_layers = layers;
    if (!moe_layers.empty()) m.moe_layers = parse_layer_list(moe_layers);
    if ((experts || top_k || layers || !moe_layers.empty()) && !given) m.source = "flags";
    return m;
}

void add_layer_base_option(CLI::App& app, std::string& value) {
    app.add_option("--router-layer-base", value,
                   "base of a Megatron router trace's layer ids: 0 (training hooks' decoder.layers index), 1 "
                   "(inference's layer_number), auto (default: detected from the file and the model)");
}

void WindowSource::add(CLI::App& app, bool window_flag) {
    app.add_option("--db", db, "library file");
    app.add_option("--trace", trace, "trace name in the library");
    if (window_flag) app.add_option("--window", window, "window name (default: the whole trace)");
    app.add_option("--input", inputs, "trace files or folders read straight (no library)");
    app.add_option("--format", format, "format of --input (default auto)");
    add_layer_base_option(app, layer_base);
    model.add(app);
}

void WindowSource::check(bool window_required) const {
    if (!db.empty() && !inputs.empty()) throw UsageError("give either --db or --input, not both");
    if (window_required && db.empty() && inputs.empty())
        throw UsageError("give the window: --db DB --trace NAME [--window W], or --input PATH...");
    if (window_required && !db.empty() && trace.empty()) throw UsageError("--db needs --trace NAME");
    if (!db.empty()) check_db_path(db);
    as_usage([&] { (void)parse_trace_format(format); });
    as_usage([&] { (void)parse_layer_base(layer_base); });
    model.check();
}

Trace WindowSource::load(std::string* trace_name, std::string* window_name, const std::vector<std::string>& ids,
                         bool routes) const {
    check(true);
    if (!db.empty()) {
        auto lib = storage::Library::open(db, storage::OpenMode::ReadOnly);
        *trace_name = trace;
        *window_name = window;
        const storage::RouteLoading r = routes ? storage::RouteLoading::Load : storage::RouteLoading::Skip;
        if (!ids.empty()) return lib->load_samples(trace, ids, r);
        if (!window.empty()) return lib->load_window(trace, window, r);
        return lib->load_trace(trace, r);
    }
    ImportOptions opt;
    opt.format = parse_trace_format(format);
    opt.router_layer_base = parse_layer_base(layer_base);
    opt.model = model.resolve();
    std::vector<std::filesystem::path> paths(inputs.begin(), inputs.end());
    Trace t = import_trace_to_memory(paths, opt);
    *trace_name = inputs.size() == 1 ? std::filesystem::path(inputs[0]).filename().string() : "inputs";
    *window_name = "";
    if (ids.empty()) return t;
    std::unordered_map<std::string, std::size_t> at;
    for (std::size_t i = 0; i < t.size(); ++i)
        at.emplace(t.samples[i].id, i);
    Trace sel;
    sel.model = t.model;
    sel.format = t.format;
    for (const auto& id : ids) {
        auto it = at.find(id);
        if (it == at.end()) throw InputError("the inputs have no sample '" + id + "'");
        SampleRecord r;
        r.info = t.samples[it->second];
        auto c = t.sample_counts(it->second);
        r.counts.assign(c.begin(), c.end());
        if (!t.routes.empty()) r.routes = t.routes[it->second]; // keep the routes: communication figures need them
        sel.append(std::move(r));
    }
    return sel;
}

namespace {

/// What an integer budget flag must be, in the budget's own range ("an integer in 1..64"): the
/// message of a malformed value ("0x10"); a value out of range is refused by check_planner_budgets.
std::string budget_int_expected(const BudgetRow& row) {
    return "an integer " + budget_rule(row);
}

/// The topology flags' own rules, before the topology is read: UsageError "<command>: --row-multiple
/// must be in 1..1048576 (got 0)", "<command>: --samples-per-cell must be in 0..1073741824 (got -1)"
/// (each batch-rule count), "<command>: --oversize must be refuse or alone (got x)".
void check_topology_flags(const PlanCmd& c) {
    if (c.row_multiple_given && (c.row_multiple < 1 || c.row_multiple > kMaxRowMultiple))
        throw UsageError(c.command + ": --row-multiple must be in 1.." + std::to_string(kMaxRowMultiple) + " (got " +
                         std::to_string(c.row_multiple) + ")");
    for (std::size_t k = 0; k < batch_flags().size(); ++k) {
        const std::int64_t v = c.batch_count[k];
        if (c.batch_count_given[k] && (v < 0 || v > kMaxBatchCount))
            throw UsageError(c.command + ": " + batch_flags()[k].flag + " must be in 0.." +
                             std::to_string(kMaxBatchCount) + " (got " + std::to_string(v) + ")");
    }
    if (c.oversize_given && c.oversize != "refuse" && c.oversize != "alone")
        throw UsageError(c.command + ": --oversize must be refuse or alone (got " + util::printable(c.oversize) + ")");
}

} // namespace

std::string budget_flag_help(const BudgetRow& row) {
    return std::string(row.help) + "; default " + budget_value_text(row, PlannerBudgets{}) + ", " + budget_rule(row);
}

void add_budget_flags(CLI::App& app, PlanCmd& c) {
    auto& b = c.budgets;
    app.add_option(
           "--topology", c.topology,
           "topology JSON file (ep_ranks, dp_slots, edp_shards, token_cap, attention_stages) or a shipped name (" +
               joined(known_topology_names()) + ")")
        ->required();
    add_int_option(app, "--row-multiple", c.row_multiple,
                   "the row count R must be a multiple of this (default: the topology's row_multiple, else 1)",
                   std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::max(),
                   &c.row_multiple_given, "an integer in 1.." + std::to_string(kMaxRowMultiple));
    for (std::size_t k = 0; k < batch_flags().size(); ++k)
        add_int_option(app, batch_flags()[k].flag, c.batch_count[k], batch_flags()[k].help,
                       std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::max(),
                       &c.batch_count_given[k], "an integer in 0.." + std::to_string(kMaxBatchCount));
    app.add_option("--oversize", c.oversize,
                   "a sample longer than the token cap: refuse (the window) or alone (a cell of its own); default: "
                   "the topology's oversize, else refuse")
        ->each([&c](const std::string&) { c.oversize_given = true; }); // --oversize "" is refused, not the default
    app.add_option("--seed", c.seed_text,
                   "random seed (same inputs + seed + threads => same plan); default " +
                       std::to_string(PlannerBudgets{}.seed) + ", in 0.." +
                       std::to_string(std::numeric_limits<std::uint64_t>::max()))
        ->type_name("UINT")
        ->each([&c](const std::string&) { c.seed_given = true; }); // --seed "" is refused, not the default
    // Every budget with a flag, from the one table (core/plan/budgets.h); integers through the
    // decimal reader, ranges checked by check_planner_budgets in run_planner.
    app.add_option("--previous", c.previous,
                   "the previous step's placement: a plan file or an expert map file (as rewrite --map reads); "
                   "routepack's placement then starts there and pays for its moves");
    for (const BudgetRow& row : budget_table()) {
        if (!row.flag) continue;
        std::visit(
            [&](auto* p) {
                using T = std::remove_pointer_t<decltype(p)>;
                const std::string help = budget_flag_help(row);
                if constexpr (std::is_same_v<T, bool>)
                    app.add_flag(row.flag, *p, help);
                else if constexpr (std::is_same_v<T, double>)
                    add_float_option(app, row.flag, *p, help);
                else
                    add_int_option(app, row.flag, *p, help, std::numeric_limits<T>::min(),
                                   std::numeric_limits<T>::max(), nullptr, budget_int_expected(row));
            },
            row.field(b));
    }
}

const std::array<BatchFlag, 3>& batch_flags() {
    static const std::array<BatchFlag, 3> flags = {{
        {"--samples-per-dp-slot", &BatchRules::samples_per_dp_slot, "samples_per_dp_slot",
         "every DP slot holds exactly this many samples over its rows (verl: batch / DP ranks; 0 = free; default: "
         "the topology's)"},
        {"--samples-per-cell", &BatchRules::samples_per_cell, "samples_per_cell",
         "every cell (micro-batch) holds exactly this many samples (static micro-batches; 0 = free; default: the "
         "topology's)"},
        {"--max-samples-per-cell", &BatchRules::max_samples_per_cell, "max_samples_per_cell",
         "every cell holds at most this many samples (Megatron's max_num_seqs; 0 = free; default: the topology's)"},
    }};
    return flags;
}

Topology load_plan_topology(const PlanCmd& c) {
    check_topology_flags(c);
    Topology t = load_topology(c.topology);
    if (c.row_multiple_given) {
        t.row_multiple = static_cast<int>(c.row_multiple);
        check_row_fields(t, c.command + ": --row-multiple");
    }
    std::string given;
    for (std::size_t k = 0; k < batch_flags().size(); ++k) {
        if (!c.batch_count_given[k]) continue;
        t.batch.*(batch_flags()[k].field) = static_cast<int>(c.batch_count[k]);
        given += std::string(given.empty() ? "" : ", ") + batch_flags()[k].flag;
    }
    if (c.oversize_given) {
        t.batch.oversize = c.oversize == "alone" ? Oversize::Alone : Oversize::Refuse;
    }
    if (!given.empty()) check_batch_fields(t, c.command + ": " + given);
    return t;
}

PlannerBudgets check_plan_flags(const PlanCmd& c) {
    PlannerBudgets budgets = c.budgets;
    if (c.seed_given) budgets.seed = parse_seed(c.seed_text, c.command);
    as_usage([&] { check_planner_budgets(budgets, c.command); });
    check_topology_flags(c);
    return budgets;
}

PlanResult run_planner(const PlanCmd& c) {
    const PlannerBudgets budgets = check_plan_flags(c); // before anything is read
    c.src.check(true);
    PlanInput in;
    // The topology first: a file or a shipped name (resources/topologies), small and quick to refuse.
    in.topology = load_plan_topology(c);
    in.window = c.src.load(&in.trace_name, &in.window_name, {}, in.topology.nodes() > 1);
    // The planner's checks, naming the file (and the batch rule's field, when the rules are the file's).
    check_topology_for_model(in.topology, in.window.model, topology_origin(c.topology));
    const bool rules_from_flags =
        std::find(c.batch_count_given.begin(), c.batch_count_given.end(), true) != c.batch_count_given.end();
    check_batch_window(in.topology, static_cast<std::int64_t>(in.window.size()),
                       rules_from_flags ? std::string() : topology_origin(c.topology));
    in.budgets = budgets;
    if (!c.previous.empty()) {
        PreviousStep prev = read_previous_step(c.previous, in.window.model, in.topology.ep_ranks);
        in.previous = std::move(prev.placement);
        in.history = std::move(prev.history);
    }
    catch_sigint();
    const bool tty = isatty(STDERR_FILENO) && !c.quiet;
    return plan_window(
        in,
        [&](const PlanEvent& e) {
            if (!tty) return;
            std::fprintf(stderr, "\r%-10s %3.0f%%", e.stage.c_str(), 100 * e.fraction);
            if (e.stage == kPlanDone) std::fputs("\n", stderr);
            std::fflush(stderr);
        },
        &g_cancel);
}

} // namespace routepack::cli
