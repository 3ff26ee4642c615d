// `routepack sweep`: every window of a trace (a whole training run) planned on one topology, with
// per-window costs, gains, placement churn and moved experts (summarize_steps, core/plan/run_steps.h). The
// windows form a chain (plan_chain): each starts from the previous window's placement and pays for its
// moves; the planner's workers run inside each window.
#include "app/commands.h"

#include "app/cli_errors.h"
#include "app/cli_int.h"

#include "core/model/window_select.h"
#include "core/plan/budgets.h"
#include "core/plan/expert_map.h"
#include "core/plan/plan_file.h"
#include "core/plan/run_steps.h"
#include "core/plan/score/placement.h"
#include "core/plan/sweep_table.h"
#include "core/util/errors.h"
#include "core/util/output_folder.h"
#include "core/util/text.h"
#include "storage/library.h"

#include <CLI/CLI.hpp>
#include <fnmatch.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <unistd.h>

namespace routepack::cli {

namespace {

/// `routepack sweep`: every window of a trace (a whole training run, e.g. from `window --split`)
/// planned on one topology with the same budgets and seed.
struct SweepCmd {
    PlanCmd plan; ///< topology, budgets, --seed, --threads, --json, --quiet
    std::string db, trace, windows = "*", out;
    bool out_given = false;
    std::int64_t expert_bytes = 0; ///< bytes one expert's parameters + optimizer state take per replica
    bool frontier = false;         ///< --frontier: max_g U per step at the move budgets of kFrontierFractions
    std::string name;              ///< --name: the whole run's name ("" = unnamed)
    std::int64_t whole_run = 0;    ///< the whole run the sweep saved (set once saved)
};

/// One window's planned result.
struct SweepRow {
    std::string window;
    PlanResult plan;
};

/// The sweep table's lines from the planned windows (core/plan/sweep_table.h).
std::vector<SweepLine> sweep_lines(const std::vector<SweepRow>& rows, const std::vector<std::int64_t>& run_ids,
                                   const std::vector<std::string>& plan_files, std::int64_t expert_bytes) {
    std::vector<SweepLine> out;
    std::vector<const Placement*> placements;
    for (std::size_t k = 0; k < rows.size(); ++k) {
        out.push_back(sweep_line(rows[k].plan));
        out.back().window = rows[k].window;
        out.back().run = run_ids[k];
        out.back().plan_file = plan_files[k];
        placements.push_back(&rows[k].plan.placement.routepack);
    }
    sweep_link(out, placements, expert_bytes);
    return out;
}

/// sweep.json (and --json): one object per line.
nlohmann::json sweep_json(const std::vector<SweepLine>& lines) {
    auto value = [](const auto& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
    auto count = [](std::int64_t v) { return v >= 0 ? nlohmann::json(v) : nlohmann::json(nullptr); };
    nlohmann::json j = nlohmann::json::array();
    for (const SweepLine& l : lines) {
        nlohmann::json o = {{"window", l.window},
                            {"samples", l.samples},
                            {"rows", l.rows},
                            {"certified", l.certified},
                            {"baseline", l.cost(Method::Baseline)},
                            {"reorder", l.cost(Method::Reorder)},
                            {"karmarkar_karp", l.cost(Method::KarmarkarKarp)},
                            {"routepack", l.cost(Method::RoutePack)},
                            {"routepack_vs_baseline_pct", l.vs_baseline_pct},
                            {"routepack_vs_reorder_pct", l.vs_reorder_pct},
                            {"lower_bound", l.lower_bound},
                            {"planner_s", l.planner_s},
                            {"time_limit_hit", l.time_limit_hit},
                            {"run", l.run},
                            {"plan_file", l.plan_file},
                            {"churn_slots", count(l.churn_slots)},
                            {"churn_bytes", count(l.churn_bytes)},
                            {"experts_moved", l.moves},
                            {"migration_bytes", value(l.migration_bytes)},
                            {"materialization_seconds", value(l.materialization_s)},
                            {"compute_seconds", value(l.compute_s)},
                            {"modelled_seconds", value(l.modelled_s)},
                            {"experts_moved_total", l.moves_total},
                            {"modelled_seconds_total", value(l.modelled_s_total)}};
        if (!l.frontier.empty()) {
            nlohmann::json f = nlohmann::json::array();
            for (const FrontierPoint& p : l.frontier)
                f.push_back({{"fraction", p.fraction},
                             {"max_moves", p.max_moves},
                             {"max_u", p.max_u},
                             {"moves", p.moves},
                             {"planned_fraction", p.planned_fraction}});
            o["frontier"] = std::move(f);
        }
        // On more than one node: the communication methods' joint cost and every method's inter-node
        // copies (null with the reason when the window has no routes).
        if (l.multi_node) {
            o["grouter"] = value(l.max_u[Method::Grouter]);
            o["routepack+comm"] = value(l.max_u[Method::RoutePackComm]);
            nlohmann::json copies;
            for (const MethodRow& m : kMethodTable)
                if (l.max_u[m.method]) copies[m.key] = value(l.inter_copies[m.method]);
            o["inter_node_copies"] = copies;
            if (l.comm_unavailable) o["communication_note"] = kCommUnavailable;
        }
        j.push_back(std::move(o));
    }
    return j;
}

/// The printed table (without --json): one line per window, then the mean gain and the windows
/// whose time limit fired.
void print_sweep(const std::vector<SweepLine>& lines, const SweepCmd& c) {
    std::cout << fmt_line("%-16s %7s %4s %11s %11s %11s %11s %9s %8s %7s %6s %9s", "window", "samples", "rows",
                          "baseline", "reorder", "kk", "routepack", "vs base", "time_s", "churn", "moved", "migrate_s")
              << (c.expert_bytes > 0 ? "  churn bytes" : "") << "\n";
    double sum_gain = 0;
    for (const SweepLine& l : lines) {
        sum_gain += l.vs_baseline_pct;
        std::cout << fmt_line("%-16s %7zu %4d %11.4f %11.4f %11.4f %11.4f %+8.2f%% %8.3f %7s %6lld %9s",
                              util::printable(l.window).c_str(), l.samples, l.rows, l.cost(Method::Baseline),
                              l.cost(Method::Reorder), l.cost(Method::KarmarkarKarp), l.cost(Method::RoutePack),
                              l.vs_baseline_pct, l.planner_s,
                              l.churn_slots < 0 ? "-" : std::to_string(l.churn_slots).c_str(),
                              static_cast<long long>(l.moves),
                              l.materialization_s ? fmt("%.4f", *l.materialization_s).c_str() : "-")
                  << (c.expert_bytes > 0 && l.churn_bytes >= 0 ? "  " + std::to_string(l.churn_bytes) : std::string())
                  << "\n";
    }
    std::cout << "sweep: " << lines.size() << " windows of trace '" << util::printable(c.trace)
              << "' planned and saved as runs " << lines.front().run << ".." << lines.back().run << " (whole run "
              << c.whole_run << ")"
              << "; mean routepack vs baseline " << fmt("%+.2f%%", sum_gain / static_cast<double>(lines.size()))
              << (c.out.empty() ? std::string() : "; written to " + c.out) << "\n";
    const SweepLine& last = lines.back();
    std::cout << "experts moved over the run: " << last.moves_total;
    if (last.modelled_s_total) {
        double compute = 0, migrate = 0;
        for (const SweepLine& l : lines)
            compute += l.compute_s.value_or(0), migrate += l.materialization_s.value_or(0);
        // What planning adds beyond the moves (the topology's migration.plan_seconds; 0 without it).
        const double planning = *last.modelled_s_total - compute - migrate;
        std::cout << "; modelled time: compute " << fmt("%.4f", compute) << " s + materialization "
                  << fmt("%.4f", migrate) << " s"
                  << (planning > 1e-12 ? " + planning beyond it " + fmt("%.4f", planning) + " s" : std::string())
                  << " = " << fmt("%.4f", *last.modelled_s_total) << " s";
    }
    std::cout << "\n";
    if (!last.frontier.empty()) {
        std::cout << "frontier: routepack's max_g U within a move budget (% of the experts) from the previous "
                     "step's placement\n"
                  << fmt_line("%-16s", "window");
        for (const FrontierPoint& p : last.frontier)
            std::cout << fmt_line(" %10s", (fmt("%g", 100 * p.fraction) + "%").c_str());
        std::cout << fmt_line(" %10s", "chain") << "\n";
        for (const SweepLine& l : lines) {
            std::cout << fmt_line("%-16s", util::printable(l.window).c_str());
            for (const FrontierPoint& p : l.frontier)
                std::cout << fmt_line(" %10.4f", p.max_u);
            std::cout << fmt_line(" %10.4f", l.cost(Method::RoutePack)) << "\n";
        }
    }
    std::string hit;
    int hits = 0;
    for (const SweepLine& l : lines)
        if (l.time_limit_hit) hit += (hits++ ? ", " : "") + util::printable(l.window);
    if (hits > 0)
        std::cout << "time limit hit in " << hits << " of " << lines.size()
                  << " windows (their searches stopped early): " << hit << "\n";
}

/// The flags' own checks (UsageError), then --out's place, before anything is read.
void check_sweep_flags(const SweepCmd& c) {
    // One expert's state is far below 1 TiB; with at most 2^22 slots per placement the churn in bytes
    // then fits 64 bits.
    if (c.expert_bytes < 0 || c.expert_bytes > (std::int64_t(1) << 40))
        throw UsageError("sweep: --expert-bytes must be in 0..1099511627776 (1 TiB; got " +
                         std::to_string(c.expert_bytes) + ")");
    if (c.out_given && c.out.empty()) throw UsageError("sweep: --out must name a folder (got '')");
    if (!c.name.empty()) storage::check_run_name(c.name, "whole run");
    check_db_path(c.db);
    if (!c.out.empty()) {
        std::error_code ec;
        const auto st = std::filesystem::status(c.out, ec);
        if (std::filesystem::exists(st) && !std::filesystem::is_directory(st))
            throw InputError(c.out + ": is not a folder (--out names the folder to write the sweep into)");
        if (std::filesystem::is_symlink(std::filesystem::symlink_status(c.out, ec)) && !std::filesystem::exists(st))
            throw InputError(c.out +
                             ": is a symbolic link to nothing (--out names the folder to write the sweep into)");
    }
}

/// The plan file of each window in --out. Window names are free text: their plan files keep
/// [A-Za-z0-9._-] only (no separators, no leading dot), so every plan lands inside --out; clashes
/// get the window's position appended. Refuses a name that is not valid UTF-8 (plans and tables are
/// JSON).
std::vector<std::string> plan_file_names(const std::vector<std::string>& names, const std::string& trace) {
    std::vector<std::string> plan_files(names.size());
    std::set<std::string> used;
    for (std::size_t k = 0; k < names.size(); ++k) {
        std::string stem;
        for (unsigned char ch : names[k])
            stem += (std::isalnum(ch) || ch == '-' || ch == '_' || ch == '.') ? static_cast<char>(ch) : '_';
        if (stem.size() > 120) stem.resize(120);
        if (stem.empty() || stem[0] == '.') stem = "_" + stem;
        if (!used.insert(stem).second) stem += "-" + std::to_string(k);
        used.insert(stem);
        plan_files[k] = stem + ".plan.json";
    }
    for (const auto& n : names) {
        try {
            (void)nlohmann::json(n).dump();
        } catch (const nlohmann::json::exception&) {
            throw InputError("sweep: window '" + util::printable(n) + "' of trace '" + util::printable(trace) +
                             "' has a name that is not valid UTF-8 (plans and tables are JSON); nothing was planned");
        }
    }
    return plan_files;
}

/// Checks the output folder before planning: it appears whole at the end or not at all (a
/// util::OutputFolder: its files are written into a staging folder beside it and moved into place
/// once the runs are saved; a failure, a signal or a kill leaves no output behind).
void check_sweep_folder(const std::string& out, const std::vector<std::string>& plan_files) {
    std::error_code ec;
    std::filesystem::path parent = std::filesystem::absolute(out, ec).lexically_normal();
    if (!parent.has_filename()) parent = parent.parent_path();
    parent = parent.parent_path();
    while (!parent.empty() && !std::filesystem::exists(parent, ec) && parent != parent.parent_path())
        parent = parent.parent_path(); // the folder under which the missing ones will be made
    if (!std::filesystem::is_directory(parent, ec))
        throw InputError(out + ": cannot create the sweep folder (" + parent.string() + " is not a folder)");
    std::vector<std::string> targets = plan_files;
    targets.emplace_back("sweep.csv");
    targets.emplace_back("sweep.json");
    for (const auto& t : targets) {
        const auto st = std::filesystem::symlink_status(std::filesystem::path(out) / t, ec);
        if (std::filesystem::exists(st) && !std::filesystem::is_regular_file(st))
            throw InputError((std::filesystem::path(out) / t).string() +
                             ": exists and is not a regular file; nothing was planned");
    }
    if (std::filesystem::exists(out, ec) && access(out.c_str(), W_OK) != 0)
        throw InputError(out + ": folder is not writable; nothing was planned");
    if (access(parent.c_str(), W_OK) != 0)
        throw InputError(out + ": cannot create the sweep folder (folder " + parent.string() +
                         " is not writable); nothing was planned");
}

/// Plans the windows matching `--windows` (a shell pattern, default every window) in natural name
/// order, as a chain (plan_chain): window k starts from window k-1's final placement, the first from
/// --previous or the identity; each window is planned on --threads workers (0 = all cores), so every
/// plan is the one `routepack plan --previous <previous plan>` gives for that window and seed. Each finished plan is
/// saved as a run of its window; gains and churn come from summarize_steps (core/plan/run_steps.h), bytes = churn x
/// --expert-bytes. Output: one line per window (or --json), and with --out DIR: DIR/sweep.csv, DIR/sweep.json and one
/// DIR/<window>.plan.json per window (plan_file_names, recorded as plan_file).
int run_sweep(SweepCmd& c) {
    catch_sigint(); // before anything is created: a signal from here on stops the sweep cleanly
    const PlannerBudgets budgets = check_plan_flags(c.plan);
    check_sweep_flags(c);
    // What a killed sweep left beside --out goes first, so a sweep stopped or refused at any later
    // point never leaves an older partial folder behind.
    if (!c.out.empty()) util::remove_stale_partial_folders(c.out);
    const Topology topology = load_plan_topology(c.plan);
    auto lib = storage::Library::open(c.db, storage::OpenMode::ReadWrite);
    const storage::TraceEntry trace = lib->trace(c.trace); // an unknown trace is refused by name
    if (trace.load_only)
        throw InputError("sweep: trace '" + util::printable(c.trace) +
                         "' is load-only (per-layer expert totals, no samples): sweeps need windows of samples");
    // Once for every window (they share the trace's model), before --out is created.
    check_topology_for_model(topology, trace.model, topology_origin(c.plan.topology));
    std::vector<std::string> names;
    for (const auto& w : lib->windows(c.trace))
        if (fnmatch(c.windows.c_str(), w.name.c_str(), 0) == 0) names.push_back(w.name);
    std::sort(names.begin(), names.end(), natural_less);
    if (names.empty())
        throw InputError("sweep: trace '" + util::printable(c.trace) + "' has no window matching '" +
                         util::printable(c.windows) + "'");
    const std::vector<std::string> plan_files = plan_file_names(names, c.trace);
    std::optional<util::OutputFolder> out_folder;
    if (!c.out.empty()) {
        check_sweep_folder(c.out, plan_files);
        out_folder.emplace(c.out);
    }
    std::vector<PlanInput> inputs(names.size());
    for (std::size_t k = 0; k < names.size(); ++k) {
        inputs[k].window = lib->load_window(c.trace, names[k], storage::routes_for(topology));
        inputs[k].trace_name = c.trace;
        inputs[k].window_name = names[k];
        inputs[k].topology = topology;
        inputs[k].budgets = budgets;
    }
    if (!c.plan.previous.empty()) {
        PreviousStep prev = read_previous_step(c.plan.previous, trace.model, topology.ep_ranks);
        inputs.front().previous = std::move(prev.placement);
        inputs.front().history = std::move(prev.history);
    }
    std::atomic<bool>& cancel = sigint_flag();
    std::vector<SweepRow> rows(names.size());
    std::atomic<std::size_t> done{0};
    const bool tty = isatty(STDERR_FILENO) && !c.plan.quiet;
    // The planner owns the threads: plan_chain runs the windows in order, each on --threads workers.
    auto planned = plan_chain(
        inputs, budgets.workers,
        [&](std::size_t, const WindowPlan&) {
            const std::size_t n = ++done;
            if (tty) std::fprintf(stderr, "\rsweep %zu/%zu windows", n, names.size());
        },
        &cancel);
    std::vector<std::string> errors(names.size());
    for (std::size_t k = 0; k < names.size(); ++k) {
        rows[k].window = names[k];
        rows[k].plan = std::move(planned[k].plan);
        errors[k] = std::move(planned[k].error);
    }
    if (tty) std::fputs("\n", stderr);
    if (cancel.load()) {
        // A sweep is a table of finished plans: an interrupted one keeps nothing rather than mixing
        // best-so-far plans into it.
        std::cerr << "routepack: sweep interrupted: no run was saved and nothing was written\n";
        return 130;
    }
    for (std::size_t k = 0; k < names.size(); ++k)
        if (!errors[k].empty()) throw InputError("sweep: window '" + util::printable(names[k]) + "': " + errors[k]);
    std::vector<std::vector<FrontierPoint>> frontier;
    if (c.frontier) {
        // Each step from the placement the chain gave it: the first from --previous or the identity.
        for (std::size_t k = 0; k < names.size(); ++k) {
            inputs[k].previous = k > 0 ? rows[k - 1].plan.placement.routepack
                                       : inputs[0].previous.value_or(identity_placement(
                                             trace.model.num_moe_layers(), trace.model.experts, topology.ep_ranks));
            if (k > 0) inputs[k].history = rows[k - 1].plan.history;
        }
        frontier = move_frontier(inputs, budgets.workers, &cancel);
        if (cancel.load()) {
            std::cerr << "routepack: sweep interrupted: no run was saved and nothing was written\n";
            return 130;
        }
    }
    std::vector<const PlanResult*> results;
    for (const auto& r : rows)
        results.push_back(&r.plan);
    std::vector<SweepLine> lines;
    // Inside the transaction that saves the runs (their ids are in the tables): the files go to the
    // staging folder, and a signal received by then rolls every run back.
    auto tables = [&](const std::vector<std::int64_t>& run_ids) {
        lines = sweep_lines(rows, run_ids, c.out.empty() ? std::vector<std::string>(rows.size()) : plan_files,
                            c.expert_bytes);
        for (std::size_t k = 0; k < frontier.size(); ++k)
            lines[k].frontier = frontier[k];
        if (out_folder) {
            out_folder->write("sweep.json", sweep_json(lines).dump(2) + "\n", "sweep table");
            std::string text = sweep_csv(lines);
            text.pop_back(); // the last line ends in "\r\n" like every other
            out_folder->write("sweep.csv", text + "\n", "sweep table");
            for (std::size_t k = 0; k < rows.size(); ++k)
                out_folder->write(plan_files[k], plan_to_json(rows[k].plan) + "\n", "plan");
        }
        if (cancel.load()) throw Cancelled();
        // Last, still inside the transaction: a folder that cannot be moved into place rolls the
        // runs back.
        if (out_folder) out_folder->commit();
    };
    try {
        storage::WholeRunSpec whole;
        whole.name = c.name;
        whole.source = storage::WholeRunSource::Sweep;
        whole.topology_name = c.plan.topology;
        whole.settings.seed = budgets.seed;
        whole.settings.budgets = budgets;
        whole.settings.start = c.plan.previous.empty() ? "identity" : "previous:" + c.plan.previous;
        lib->save_runs(results, c.plan.topology, tables, &whole, &c.whole_run);
    } catch (const Cancelled&) {
        std::cerr << "routepack: sweep interrupted: no run was saved and nothing was written\n";
        return 130;
    }
    if (c.plan.json)
        std::cout << sweep_json(lines).dump(2) << "\n";
    else
        print_sweep(lines, c);
    bool cancelled = false;
    for (const auto& r : rows)
        cancelled = cancelled || r.plan.cancelled;
    return cancelled ? 130 : 0;
}

} // namespace

Command register_sweep(CLI::App& app) {
    auto c = std::make_shared<SweepCmd>();
    c->plan.command = "sweep";
    auto* sweep = app.add_subcommand(
        "sweep", "plan every window of a trace (a whole run) and report per-window costs, gains and placement churn");
    sweep->add_option("--db", c->db, "library file")->required();
    sweep->add_option("--trace", c->trace, "trace name")->required();
    sweep->add_option("--windows", c->windows, "shell pattern of window names (default *: every window)");
    sweep->add_option("--out", c->out, "folder for sweep.csv, sweep.json and one plan JSON per window")
        ->each([c](const std::string&) { c->out_given = true; });
    add_int_option(*sweep, "--expert-bytes", c->expert_bytes,
                   "bytes of one expert's parameters plus optimizer state per replica (churn in bytes)");
    add_budget_flags(*sweep, c->plan);
    sweep->add_flag("--json", c->plan.json, "print the table as JSON");
    sweep->add_flag("--frontier", c->frontier,
                    "also plan every step from the chain's previous placement within move budgets of 0, 1, 2, 5, "
                    "10, 25, 50 and 100% of the experts, and report max_g U at each (the steps' frontier)");
    sweep->add_option("--name", c->name,
                      "name of the whole run the sweep is saved as (routepack info lists it; default: unnamed, "
                      "known by its id)");
    sweep->add_flag("--quiet", c->plan.quiet, "no progress on stderr");
    return {sweep, [c] { return run_sweep(*c); }};
}

} // namespace routepack::cli
