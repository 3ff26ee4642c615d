// `routepack sweep`: every window of a trace (a whole training run) planned on one topology, with
// per-window costs, gains and placement churn. The windows run in parallel through the planner's
// plan_windows (one planner worker per window).
#include "app/commands.h"

#include "app/cli_int.h"

#include "core/model/window_select.h"
#include "core/plan/budgets_json.h"
#include "core/plan/placement.h"
#include "core/plan/plan_file.h"
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
};

/// One window's line of the sweep table.
struct SweepRow {
    std::string window;
    PlanResult plan;
    std::int64_t run_id = 0;
    std::int64_t churn = -1; ///< slots whose expert changes against the previous window (-1: first window)
};

/// Plans the windows matching `--windows` (a shell pattern, default every window) in natural name
/// order. The windows run in parallel (plan_windows) on --threads workers (0 = all cores), one
/// planner worker each, so every plan is the one `routepack plan --threads 1` gives for that window
/// and seed. Each finished plan is saved as a run of its window; churn is placement_moves(next,
/// previous) summed over MoE layers, bytes = churn x --expert-bytes. Output: one line per window (or
/// --json), and with --out DIR: DIR/sweep.csv, DIR/sweep.json and one DIR/<window>.plan.json per
/// window (the name reduced to [A-Za-z0-9._-], recorded as plan_file).
int run_sweep(const SweepCmd& c) {
    catch_sigint(); // before anything is created: a signal from here on stops the sweep cleanly
    PlannerBudgets budgets = c.plan.budgets;
    if (c.plan.seed_given) budgets.seed = parse_seed(c.plan.seed_text, "sweep");
    check_planner_budgets(budgets, "sweep");
    // One expert's state is far below 1 TiB; with at most 2^22 slots per placement the churn in bytes
    // then fits 64 bits.
    if (c.expert_bytes < 0 || c.expert_bytes > (std::int64_t(1) << 40))
        throw InputError("sweep: --expert-bytes must be in 0..1099511627776 (1 TiB; got " +
                         std::to_string(c.expert_bytes) + ")");
    if (c.out_given && c.out.empty()) throw InputError("sweep: --out must name a folder (got '')");
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
    // Window names are free text: their plan files keep [A-Za-z0-9._-] only (no separators, no
    // leading dot), so every plan lands inside --out; clashes get the window's position appended.
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
            throw InputError("sweep: window '" + util::printable(n) + "' of trace '" + util::printable(c.trace) +
                             "' has a name that is not valid UTF-8 (plans and tables are JSON); nothing was planned");
        }
    }
    // The output folder appears whole at the end or not at all: its files are written into a
    // staging folder beside it (checked now, before planning) and moved into place once the runs
    // are saved; a failure, a signal or a kill leaves no output behind.
    std::optional<util::OutputFolder> out_folder;
    if (!c.out.empty()) {
        std::error_code ec;
        std::filesystem::path parent = std::filesystem::absolute(c.out, ec).lexically_normal();
        if (!parent.has_filename()) parent = parent.parent_path();
        parent = parent.parent_path();
        while (!parent.empty() && !std::filesystem::exists(parent, ec) && parent != parent.parent_path())
            parent = parent.parent_path(); // the folder under which the missing ones will be made
        if (!std::filesystem::is_directory(parent, ec))
            throw InputError(c.out + ": cannot create the sweep folder (" + parent.string() + " is not a folder)");
        std::vector<std::string> targets = plan_files;
        targets.emplace_back("sweep.csv");
        targets.emplace_back("sweep.json");
        for (const auto& t : targets) {
            const auto st = std::filesystem::symlink_status(std::filesystem::path(c.out) / t, ec);
            if (std::filesystem::exists(st) && !std::filesystem::is_regular_file(st))
                throw InputError((std::filesystem::path(c.out) / t).string() +
                                 ": exists and is not a regular file; nothing was planned");
        }
        if (std::filesystem::exists(c.out, ec) && access(c.out.c_str(), W_OK) != 0)
            throw InputError(c.out + ": folder is not writable; nothing was planned");
        if (access(parent.c_str(), W_OK) != 0)
            throw InputError(c.out + ": cannot create the sweep folder (folder " + parent.string() +
                             " is not writable); nothing was planned");
        out_folder.emplace(c.out);
    }
    std::vector<PlanInput> inputs(names.size());
    for (std::size_t k = 0; k < names.size(); ++k) {
        inputs[k].window = lib->load_window(c.trace, names[k], storage::routes_for(topology));
        inputs[k].trace_name = c.trace;
        inputs[k].window_name = names[k];
        inputs[k].topology = topology;
        inputs[k].budgets = budgets;
        inputs[k].budgets.workers = 1;
    }
    std::atomic<bool>& cancel = sigint_flag();
    std::vector<SweepRow> rows(names.size());
    std::atomic<std::size_t> done{0};
    const bool tty = isatty(STDERR_FILENO) && !c.plan.quiet;
    // The planner owns the threads: plan_windows runs the windows on --threads workers, one planner
    // worker each.
    auto planned = plan_windows(
        inputs, budgets.workers,
        [&](std::size_t) {
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
    for (std::size_t k = 1; k < rows.size(); ++k) {
        rows[k].churn = 0;
        for (const auto& layer :
             placement_moves(rows[k].plan.placement.routepack, rows[k - 1].plan.placement.routepack))
            rows[k].churn += static_cast<std::int64_t>(layer.size());
    }
    std::vector<const PlanResult*> results;
    for (const auto& r : rows)
        results.push_back(&r.plan);

    // RFC 4180 field: quoted (quotes doubled) when it holds a comma, quote, CR or LF.
    auto csv_field = [](const std::string& v) {
        if (v.find_first_of(",\"\r\n") == std::string::npos) return v;
        std::string out = "\"";
        for (char ch : v)
            out += ch == '"' ? std::string("\"\"") : std::string(1, ch);
        return out + "\"";
    };
    auto gain = [](double base, double x) { return base > 0 ? 100.0 * (x - base) / base : 0.0; };
    nlohmann::json j = nlohmann::json::array();
    std::ostringstream csv;
    // Inside the transaction that saves the runs (their ids are in the tables): the files go to the
    // staging folder, and a signal received by then rolls every run back.
    auto tables = [&](const std::vector<std::int64_t>& run_ids) {
        for (std::size_t k = 0; k < rows.size(); ++k)
            rows[k].run_id = run_ids[k];
        csv << "window,samples,rows,certified,baseline,reorder,karmarkar_karp,routepack,routepack_vs_baseline_pct,"
               "routepack_vs_reorder_pct,lower_bound,planner_s,time_limit_hit,churn_slots,churn_bytes,run,grouter,"
               "routepack+comm,"
               "routepack_inter_node_copies,grouter_inter_node_copies,routepack+comm_inter_node_copies\r\n";
        for (const auto& r : rows) {
            const PlanResult& p = r.plan;
            const double base = p.baseline.metrics.score.max_u, rp = p.routepack.metrics.score.max_u;
            nlohmann::json o = {{"window", r.window},
                                {"samples", p.samples.size()},
                                {"rows", p.rows.rows},
                                {"certified", p.rows.certified},
                                {"baseline", base},
                                {"reorder", p.reorder.metrics.score.max_u},
                                {"karmarkar_karp", p.karmarkar_karp.metrics.score.max_u},
                                {"routepack", rp},
                                {"routepack_vs_baseline_pct", gain(base, rp)},
                                {"routepack_vs_reorder_pct", gain(p.reorder.metrics.score.max_u, rp)},
                                {"lower_bound", p.bound.value},
                                {"planner_s", p.timings.count("total") ? p.timings.at("total") : 0.0},
                                {"time_limit_hit", p.time_limit_hit},
                                {"run", r.run_id},
                                {"plan_file", c.out.empty() ? std::string() : plan_files[j.size()]}};
            if (r.churn >= 0) {
                o["churn_slots"] = r.churn;
                o["churn_bytes"] =
                    c.expert_bytes > 0 ? nlohmann::json(r.churn * c.expert_bytes) : nlohmann::json(nullptr);
            } else {
                o["churn_slots"] = nullptr;
                o["churn_bytes"] = nullptr;
            }
            // On more than one node: the communication methods' joint cost and every method's inter-node
            // copies (null with the reason when the window has no routes).
            std::string comm_csv = ",,,,,"; // five empty fields on one node
            if (p.comm.nodes > 1) {
                o["grouter"] =
                    p.comm.grouter ? nlohmann::json(p.comm.grouter->metrics.score.max_u) : nlohmann::json(nullptr);
                o["routepack+comm"] = p.comm.routepack_comm ? nlohmann::json(p.comm.routepack_comm->metrics.score.max_u)
                                                            : nlohmann::json(nullptr);
                nlohmann::json copies;
                for (const MethodResult* m : p.methods())
                    copies[m->key()] = m->comm ? nlohmann::json(m->comm->inter_total) : nlohmann::json(nullptr);
                o["inter_node_copies"] = copies;
                if (!p.routepack.comm) o["communication_note"] = kCommUnavailable;
                auto num = [](const nlohmann::json& v) {
                    return v.is_null() ? std::string() : fmt("%.17g", v.get<double>());
                };
                auto count = [](const std::optional<MethodResult>& m) {
                    return m && m->comm ? std::to_string(m->comm->inter_total) : std::string();
                };
                comm_csv = "," + num(o["grouter"]) + "," + num(o["routepack+comm"]) + "," +
                           (p.routepack.comm ? std::to_string(p.routepack.comm->inter_total) : std::string()) + "," +
                           count(p.comm.grouter) + "," + count(p.comm.routepack_comm);
            }
            j.push_back(o);
            csv << csv_field(r.window) << "," << p.samples.size() << "," << p.rows.rows << ","
                << (p.rows.certified ? 1 : 0) << "," << fmt("%.17g", base) << ","
                << fmt("%.17g", p.reorder.metrics.score.max_u) << ","
                << fmt("%.17g", p.karmarkar_karp.metrics.score.max_u) << "," << fmt("%.17g", rp) << ","
                << fmt("%.6f", gain(base, rp)) << "," << fmt("%.6f", gain(p.reorder.metrics.score.max_u, rp)) << ","
                << fmt("%.17g", p.bound.value) << "," << fmt("%.6f", o["planner_s"].get<double>()) << ","
                << (p.time_limit_hit ? 1 : 0) << "," << (r.churn >= 0 ? std::to_string(r.churn) : "") << ","
                << (r.churn >= 0 && c.expert_bytes > 0 ? std::to_string(r.churn * c.expert_bytes) : "") << ","
                << r.run_id << comm_csv << "\r\n";
        }
        if (out_folder) {
            out_folder->write("sweep.json", j.dump(2) + "\n", "sweep table");
            std::string text = csv.str();
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
        lib->save_runs(results, c.plan.topology, tables);
    } catch (const Cancelled&) {
        std::cerr << "routepack: sweep interrupted: no run was saved and nothing was written\n";
        return 130;
    }
    if (c.plan.json) {
        std::cout << j.dump(2) << "\n";
    } else {
        std::cout << fmt_line("%-16s %7s %4s %11s %11s %11s %11s %9s %8s %7s", "window", "samples", "rows", "baseline",
                              "reorder", "kk", "routepack", "vs base", "time_s", "churn")
                  << (c.expert_bytes > 0 ? "  churn bytes" : "") << "\n";
        double sum_gain = 0;
        for (const auto& o : j) {
            sum_gain += o["routepack_vs_baseline_pct"].get<double>();
            std::cout << fmt_line(
                             "%-16s %7zu %4d %11.4f %11.4f %11.4f %11.4f %+8.2f%% %8.3f %7s",
                             util::printable(o["window"].get<std::string>()).c_str(), o["samples"].get<std::size_t>(),
                             o["rows"].get<int>(), o["baseline"].get<double>(), o["reorder"].get<double>(),
                             o["karmarkar_karp"].get<double>(), o["routepack"].get<double>(),
                             o["routepack_vs_baseline_pct"].get<double>(), o["planner_s"].get<double>(),
                             o["churn_slots"].is_null() ? "-"
                                                        : std::to_string(o["churn_slots"].get<std::int64_t>()).c_str())
                      << (c.expert_bytes > 0 && !o["churn_bytes"].is_null()
                              ? "  " + std::to_string(o["churn_bytes"].get<std::int64_t>())
                              : std::string())
                      << "\n";
        }
        std::cout << "sweep: " << rows.size() << " windows of trace '" << util::printable(c.trace)
                  << "' planned and saved as runs " << rows.front().run_id << ".." << rows.back().run_id
                  << "; mean routepack vs baseline " << fmt("%+.2f%%", sum_gain / static_cast<double>(rows.size()))
                  << (c.out.empty() ? std::string() : "; written to " + c.out) << "\n";
        std::string hit;
        int hits = 0;
        for (const auto& r : rows)
            if (r.plan.time_limit_hit) hit += (hits++ ? ", " : "") + util::printable(r.window);
        if (hits > 0)
            std::cout << "time limit hit in " << hits << " of " << rows.size()
                      << " windows (their searches stopped early): " << hit << "\n";
    }
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
    sweep->add_flag("--quiet", c->plan.quiet, "no progress on stderr");
    return {sweep, [c] { return run_sweep(*c); }};
}

} // namespace routepack::cli
