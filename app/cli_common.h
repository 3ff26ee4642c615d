#pragma once
// What the `routepack` commands share (app/cmd_*.cpp): the command table entry, the SIGINT flag,
// the option groups more than one command takes (model flags, the window source, the planner's
// budget flags), output checks, the atomic output write and how names and numbers are echoed.
// Error messages here are part of the CLI's contract (tests/tst_cli*.cpp assert them verbatim).
#include "core/model/model.h"
#include "core/model/trace.h"
#include "core/plan/budgets.h"
#include "core/plan/planner.h"

#include <array>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace routepack::cli {

/// One `routepack` command: the CLI11 subcommand its register function added (with its options)
/// and the function that runs it after a successful parse. `run` returns the exit status (0
/// success, 130 cancelled); errors are thrown (UsageError for the command line's own faults,
/// checked before anything is read; InputError, Cancelled, ...) and reported by cli::run() as one
/// "routepack: error: ..." line, exit status 2 for a UsageError and 1 for any other error.
struct Command {
    CLI::App* sub = nullptr;
    std::function<int()> run;
};

/// Installs the handler of SIGINT, SIGTERM and SIGHUP that sets sigint_flag() (importer, planner
/// and sweep poll it and stop, leaving nothing half written; the command then exits 130).
void catch_sigint();
/// The flag the SIGINT handler sets: the cancel flag handed to the importer and the planner.
std::atomic<bool>& sigint_flag();

/// snprintf of one value with format `f` ("%.4f", "%+.2f%%", ...).
std::string fmt(const char* f, double v);

/// snprintf of several values into a string (table lines).
template <class... Args> std::string fmt_line(const char* f, Args... args) {
    const int n = std::snprintf(nullptr, 0, f, args...);
    std::string out(static_cast<std::size_t>(n > 0 ? n : 0) + 1, '\0');
    std::snprintf(out.data(), out.size(), f, args...);
    out.pop_back();
    return out;
}

/// A byte count as "N B", "x.y KiB" (>= 1024) or "x.y MiB" (>= 2^20).
std::string human_bytes(std::uint64_t b);

/// A name or other stored text as echoed on a terminal: one line, escapes for control characters
/// and invalid UTF-8, cut at 80 characters with "..." (the library keeps it whole).
std::string shown(const std::string& s);
/// A path as echoed: escapes as shown(), never cut.
std::string shown_path(const std::string& s);

/// --db values: a file path. UsageError "--db must be a file path (got '<db>')" for "" and
/// ":memory:" (which would open a library that vanishes at exit).
void check_db_path(const std::string& db);

/// Refuses an output path that is a folder (or another non-file), before any work is done:
/// InputError "<out>: is a folder (<flag> names the file to write)" / "<out>: not a regular file (...)".
void check_output_file(const std::string& out, const char* flag);

/// Writes `text` + "\n" to `out` atomically (util::write_file_atomically, core/util/atomic_file.h);
/// InputError "<out>: cannot write <what> (<step>: <reason>)" when that fails.
void write_output(const std::string& out, const std::string& text, const char* what);

/// --seed of `command` as an unsigned 64-bit integer; UsageError "<command>: --seed must be an
/// integer in 0..18446744073709551615 (got '<text>')" for anything else (a negative number, or one
/// above 2^64-1, included: never wrapped).
std::uint64_t parse_seed(const std::string& text, const std::string& command = "window");

/// Model flags (--model, --model-config, --experts, --top-k, --layers, --moe-layers) of import,
/// plan, compare, validate and place.
struct ModelFlags {
    std::string model;        ///< shipped model description name
    std::string model_config; ///< Hugging Face config.json path
    int experts = 0;          ///< E override (0 = not given)
    int top_k = 0;            ///< k override
    int layers = 0;           ///< num_hidden_layers override
    std::string moe_layers;   ///< layer list text (parse_layer_list), "" = not given

    /// Adds the six options to `app`: --experts in 1..kMaxExperts, --top-k in 1..kMaxTopK, --layers
    /// in 1..kMaxHiddenLayers (0 = not given), each refused while parsing otherwise (UsageError
    /// "<command>: --experts must be an integer in 1..1048576 (got '-4')").
    void add(CLI::App& app);
    /// The flags' own checks, before anything is read: UsageError for both --model and
    /// --model-config, an unknown --model (known_model's message) or a bad --moe-layers list
    /// (parse_layer_list's).
    void check() const;
    /// The model the flags describe: the shipped model or config.json, then the overrides. check()'s
    /// errors first, then InputError for a config.json that cannot be read.
    ModelDescription resolve() const;
};

/// Adds --router-layer-base (auto, 0, 1; read with parse_layer_base) to `app`.
void add_layer_base_option(CLI::App& app, std::string& value);

/// Inputs shared by plan, compare, validate and place: a library window, or trace files read
/// straight (imported in memory).
struct WindowSource {
    std::string db, trace, window, format = "auto";
    std::string layer_base = "auto"; ///< --router-layer-base (parse_layer_base)
    std::vector<std::string> inputs;
    ModelFlags model;

    /// Adds --db, --trace, [--window,] --input, --format, --router-layer-base and the model flags to `app`.
    void add(CLI::App& app, bool window_flag = true);
    /// True when --db or --input was given.
    bool given() const { return !db.empty() || !inputs.empty(); }
    /// The flags' own checks, before anything is read (UsageError): "give either --db or --input,
    /// not both"; with `window_required`, "give the window: --db DB --trace NAME [--window W], or
    /// --input PATH..." when neither is given and "--db needs --trace NAME"; check_db_path; an
    /// unknown --format or --router-layer-base (parse_trace_format's, parse_layer_base's message);
    /// ModelFlags::check.
    void check(bool window_required) const;

    /// Loads the window (check(true) first); `ids` (when non-empty) selects and orders samples by
    /// id. Sets the trace and window names the plan records (the file name, or "inputs", for
    /// --input). With `routes` false a library window is read without its per-token routes (they
    /// only serve communication figures on more than one node).
    Trace load(std::string* trace_name, std::string* window_name, const std::vector<std::string>& ids = {},
               bool routes = true) const;
};

/// The planner's options shared by plan, compare and sweep: window, topology, --seed and the
/// budget flags, --json and --quiet.
struct PlanCmd {
    std::string command; ///< "plan", "compare" or "sweep", for messages
    WindowSource src;
    std::string topology, out;
    std::string seed_text;           ///< --seed, parsed by run_planner (0..2^64-1, never wrapped)
    bool seed_given = false;         ///< --seed was given (an empty value is then refused)
    bool row_multiple_given = false; ///< --row-multiple given: it replaces the topology's row_multiple
    std::int64_t row_multiple = 1;
    /// --samples-per-dp-slot, --samples-per-cell, --max-samples-per-cell (batch_flags() order): each,
    /// when given, replaces the topology's batch rule.
    std::array<std::int64_t, 3> batch_count{};
    std::array<bool, 3> batch_count_given{};
    std::string oversize;        ///< --oversize refuse|alone
    bool oversize_given = false; ///< --oversize was given (its value may be "", refused)
    std::string previous;        ///< --previous FILE: the previous step's placement (plan or expert map file)
    PlannerBudgets budgets;
    bool json = false;
    bool quiet = false;
};

/// The batch-rule flags of plan, compare and sweep: flag, the BatchRules count it sets, its help.
struct BatchFlag {
    const char* flag;
    int BatchRules::*field;
    const char* key; ///< the topology file's key
    const char* help;
};
/// The three count flags, in PlanCmd::batch_count order.
const std::array<BatchFlag, 3>& batch_flags();

/// The topology of `c`: --topology loaded (a file or a shipped name), with --row-multiple and the
/// batch-rule flags, when given, in place of its values. First the flags' own rules (UsageError
/// "<command>: --row-multiple must be in 1..1048576 (got 0)", "<command>: --samples-per-cell must be
/// in 0..1073741824 (got -1)", "<command>: --oversize must be refuse or alone (got x)"); then, with
/// the topology, InputError for check_batch_fields' errors prefixed by "<command>:
/// --samples-per-cell" and the like, and check_row_fields' "<command>: --row-multiple: min_rows ...
/// rounded up ..." when the topology's min_rows has no multiple within the largest row count.
Topology load_plan_topology(const PlanCmd& c);

/// The --help line of a budget flag: the row's help, then its default and range from the budget
/// table ("M: fixed-row seed candidates; default 32, in 1..4096": row.help, "; default ",
/// budget_value_text of PlannerBudgets{}, ", ", budget_rule).
std::string budget_flag_help(const BudgetRow& row);

/// Adds --topology (required), --row-multiple, --seed (UINT), --threads, --time-limit and the
/// seeding / annealing / row-count / polish budget flags to `app`, stored in `c`; every budget flag's
/// help is budget_flag_help.
void add_budget_flags(CLI::App& app, PlanCmd& c);

/// The planner flags' own checks, before anything is read, each a UsageError: --seed parsed
/// (parse_seed), the budgets checked (check_planner_budgets: "<command>: --seeds must be in 1..4096
/// (got 0)"), the topology flags' rules (load_plan_topology's first). Returns the budgets with the
/// seed.
PlannerBudgets check_plan_flags(const PlanCmd& c);

/// Plans `c`'s window: check_plan_flags and the window flags' checks (WindowSource::check) first,
/// then the topology loaded, the window loaded, plan_window run with a one-line progress on a
/// terminal's stderr (unless --quiet) and SIGINT as its cancel flag.
PlanResult run_planner(const PlanCmd& c);

} // namespace routepack::cli
