#pragma once
// The trace library: one SQLite file (schema versioned by numbered migrations compiled into this
// library, WAL, foreign keys, quick_check on open). One Library object per thread.
#include "core/import/import.h"
#include "core/model/topology.h"
#include "core/model/trace.h"
#include "core/plan/method.h"
#include "core/plan/planner.h"
#include "core/plan/profiler_trace.h"

#include <atomic>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

struct sqlite3;

namespace routepack::storage {

/// Schema version this build writes and understands (PRAGMA user_version).
int supported_schema_version();

/// A trace as listed in the library.
struct TraceEntry {
    std::int64_t id = 0;
    std::string name;
    std::string format;     ///< importer name (to_string(TraceFormat))
    bool load_only = false; ///< aggregate per-layer totals only: no samples, cannot be packed
    ModelDescription model;
    std::size_t samples = 0;
    std::string fingerprint; ///< hex64 of ImportSummary::fingerprint (order-independent over the files)
    std::string imported_at; ///< UTC ISO-8601
    std::vector<std::string> notes;
};

/// A named optimizer-step window: an ordered subset of one trace's samples.
struct WindowEntry {
    std::int64_t id = 0;
    std::string trace;
    std::string name;
    std::string definition; ///< how it was made, e.g. "first 512", "random 64 seed 7", "ids FILE"
    std::size_t samples = 0;
};

/// A named topology saved in the library (table `topologies`), with the planner budgets kept with
/// it (the studio's topology editor saves both; `budgets` is empty when none were saved).
struct TopologyEntry {
    std::int64_t id = 0;
    std::string name;
    Topology topology;
    std::optional<PlannerBudgets> budgets;
    std::string created_at; ///< UTC ISO-8601
};

/// One compared method of a saved run (table `run_results`).
struct RunMethodEntry {
    /// core name: "baseline", "reorder", "karmarkar_karp", "routepack", "grouter", "routepack+comm"
    std::string method;
    int rows = 0;          ///< R of its layout
    LayoutMetrics metrics; ///< score tuple (exact) and the Table 3-4 quantities
};

/// One planner run saved in the library (tables `runs`, `plans`, `run_results`,
/// `annealing_history`).
struct RunEntry {
    std::int64_t id = 0;
    std::string name;                      ///< given by rename_run; "" = unnamed (known by its id)
    std::string trace, window, topology;   ///< names
    Topology topology_value;               ///< the topology the run used
    std::int64_t plan_id = 0;              ///< 0: the run produced no plan (failed)
    PlannerBudgets budgets;                ///< as given to the planner (workers 0 = all cores)
    int workers = 0;                       ///< worker threads actually used (> 0)
    std::string status;                    ///< "finished", "cancelled" (best valid plan so far) or "failed"
    std::string message;                   ///< error of a failed run, or a note ("time limit hit")
    std::string started_at, finished_at;   ///< UTC ISO-8601
    std::map<std::string, double> timings; ///< seconds per stage, and "total"
    // Facts of the plan (zero for a failed run).
    std::string fingerprint;
    int rows = 0;           ///< R*
    bool certified = false; ///< R* certified
    Score score;            ///< routepack's exact score tuple
    /// baseline, reorder, karmarkar_karp, routepack (empty for a failed run).
    std::vector<RunMethodEntry> results;
    /// Annealing convergence per temperature level (LevelStats::infeasible is not stored: 0).
    std::vector<LevelStats> levels;
};

/// Refuses a name Library::rename_run (kind "run") or rename_whole_run and WholeRunSpec (kind "whole
/// run") do not store: InputError naming the setting "<kind> name" (key "<kind>_name", spaces as
/// '_'), the texts rename_run lists.
void check_run_name(const std::string& name, const std::string& kind);

/// Where a whole run came from (whole_runs.source).
enum class WholeRunSource { Sweep, Studio, Cluster };
/// "sweep", "studio", "cluster".
const char* whole_run_source_key(WholeRunSource s);

/// The settings that tell whole runs apart, as stored (whole_runs.settings JSON: seed, budgets,
/// start, chained).
struct WholeRunSettings {
    std::uint64_t seed = 0;
    /// The planner's budgets (planner_budgets_to_json); a cluster run's are its run.json "budgets",
    /// read with parse_planner_budgets (keys it lacks take their defaults).
    PlannerBudgets budgets;
    /// The placement step 0 started from: "identity", or "previous:<plan or map file>".
    std::string start = "identity";
    /// True when step k started from step k-1's placement (every whole run stored today).
    bool chained = true;
};

/// What save_runs / save_whole_run store for a whole run besides its steps.
struct WholeRunSpec {
    std::string name; ///< "" = unnamed; else rename_run's rules (trimmed, 1..80 characters)
    WholeRunSource source = WholeRunSource::Sweep;
    std::string topology_name; ///< the name its step runs' topology is saved under
    WholeRunSettings settings;
};

/// A whole run of the library (tables `whole_runs`, `whole_run_steps`; schema migration 7): a sweep,
/// a run planned in the studio, or one chain of an imported cluster run.
struct WholeRunEntry {
    std::int64_t id = 0;
    std::string name; ///< "" = unnamed
    WholeRunSource source = WholeRunSource::Sweep;
    std::string trace;    ///< the plans' inputs.trace
    std::string topology; ///< topology name (a cluster chain's folder name)
    Topology topology_value;
    WholeRunSettings settings;
    /// Saved runs of its steps in run order (sweep and studio); empty for a cluster run's chain.
    std::vector<std::int64_t> runs;
    std::int64_t cluster_run = 0; ///< > 0: the imported cluster run whose chain it is
    std::size_t cluster_chain = 0;
    std::size_t steps = 0;  ///< runs.size(), or the chain's steps (planned and failed)
    std::string created_at; ///< UTC ISO-8601
};

/// One chain of a cluster run: the folder of its plans in OUT and its topology.
struct ClusterRunChain {
    std::string name; ///< OUT/<name>/ holds the chain's plans (a topology file's stem or a shipped name)
    Topology topology;
};

/// A run swept on a cluster (python3 -m routepack.run sweep) as imported from its output folder
/// (tables `cluster_runs`, `cluster_run_chains`).
struct ClusterRunEntry {
    std::int64_t id = 0;
    std::filesystem::path out; ///< OUT, absolute
    std::string trace;         ///< the plans' inputs.trace (the run folder's name unless --trace-name)
    std::string model;         ///< run.json "model" as JSON text (a shipped name, a path, an object)
    std::uint64_t seed = 0;
    int threads = 1;                     ///< planner threads per step
    std::string budgets;                 ///< run.json "budgets", a JSON object (the plan file's budget keys)
    std::string previous;                ///< "identity", or "previous:<file>" step 0 started from
    std::vector<ClusterRunChain> chains; ///< in summary order
    std::size_t steps = 0;               ///< steps per chain
    std::size_t planned = 0, failed = 0; ///< steps planned / failed, all chains together
    std::string fingerprint;             ///< hex64 FNV-1a of run.json's then summary.json's bytes
    std::string imported_at;             ///< UTC ISO-8601
};

/// One step of one chain of an imported cluster run (table `cluster_run_steps`): summary.json's
/// line. The plan's figures are set for a planned step only; error and stage for a failed one.
struct ClusterRunStep {
    std::size_t chain = 0;           ///< index into ClusterRunEntry::chains
    std::string chain_name;          ///< ClusterRunEntry::chains[chain].name
    std::size_t position = 0;        ///< the step's index in the run (0-based, natural order of names)
    std::string window;              ///< the step's window name (its entry without the extension)
    std::filesystem::path step_path; ///< the step's file or folder as the sweep read it ("" when not recorded)
    bool planned = false;            ///< false: failed
    std::size_t samples = 0;
    int rows = 0; ///< R*
    bool certified = false;
    PerMethod<std::optional<double>> max_u; ///< max_g U per method; grouter, routepack+comm on > 1 node only
    double gain_vs_baseline_pct = 0, gain_vs_reorder_pct = 0; ///< routepack's max_g U against them, %
    double lower_bound = 0;                                   ///< of max_g U
    std::int64_t experts_moved = 0;                           ///< against the placement the step started from
    /// With the topology's migration cost model only: bytes moved, seconds (migration.md).
    std::optional<double> migration_bytes, materialization_seconds, compute_seconds, modelled_seconds;
    double planner_seconds = 0, task_seconds = 0; ///< the planner's, and the whole task's (read excluded)
    bool time_limit_hit = false;
    std::string worker;              ///< the Dask worker's address (or host:pid) that planned it
    std::string previous_from;       ///< "identity", "previous:<file>" or the window it started from
    std::filesystem::path plan_file; ///< OUT/<chain>/<window>.plan.json (planned), "" (failed)
    std::string error;               ///< the importer's or planner's message (failed)
    std::string stage;               ///< "read" or "plan" (failed; "" when the summary does not say)
};

/// What Library::import_cluster_run did.
struct ClusterRunImport {
    enum class Outcome {
        Imported,  ///< a new run
        Replaced,  ///< the same OUT was imported before; its rows now hold this summary
        Unchanged, ///< the same OUT with the same run.json and summary.json bytes: nothing written
    };
    Outcome outcome = Outcome::Imported;
    ClusterRunEntry run;
};

/// Reads a cluster run's output folder (OUT/run.json, OUT/summary.json) as import_cluster_run
/// stores it, writing nothing: the entry (id 0, imported_at empty) and its steps. Every field is
/// checked with util::JsonField, errors InputError naming the file and field:
///   "<OUT>: no such folder" / "<OUT>: is not a folder", read_input_file's "<file>: no such ..."
///   "<file>: <path> is missing", "<file>: <path> is <value>, not <rule>" (e.g. "<OUT>/summary.json:
///   lines[3].samples is 0, not an integer in 1..2147483647"; a line out of order: "lines[2].window
///   is \"step-3\", not \"step-2\""; a planned step without its plan file: "lines[0].plan_file is
///   \"step-1.plan.json\", not a plan file in <OUT>/<chain>"), parse_topology's errors for a chain's
///   topology ("<OUT>/run.json: topologies.<chain>: ..."), parse_json_document's for malformed JSON.
std::pair<ClusterRunEntry, std::vector<ClusterRunStep>> read_cluster_run_folder(const std::filesystem::path& out);

/// One plan of a measured step in the library (table `measured_plans`).
struct MeasuredPlanEntry {
    std::string name;                     ///< the measured file's plan name (a method, or a plan)
    int rows = 0;                         ///< R of the layout it ran
    double step_seconds = 0;              ///< measured, composed by the step's synchronization
    std::optional<double> modelled_max_u; ///< the cost model's max_g U of that layout (units of C)
    std::int64_t run_id = 0;              ///< the saved run whose layout it measured (0: none in the library)
    std::string method;                   ///< that run's method ("baseline", ..., "routepack"; "" when run_id is 0)
};

/// A measured step stored beside its window (tables `measured_steps`, `measured_plans`).
struct MeasuredStepEntry {
    std::int64_t id = 0;
    std::string trace, window;            ///< the window measured
    std::string source;                   ///< "measured" (a measured file) or "profiler" (torch.profiler traces)
    std::vector<std::string> files;       ///< the imported files, absolute
    std::string fingerprint;              ///< hex64 FNV-1a of the stored measured file's text
    std::string imported_at;              ///< UTC ISO-8601
    Topology topology;                    ///< the topology it was measured under
    std::vector<MeasuredPlanEntry> plans; ///< in the file's order
};

/// What Library::import_measured / import_profiler did.
struct MeasuredImport {
    bool unchanged = false; ///< the same measured file was stored for the window before: nothing written
    MeasuredStepEntry step;
};

/// What deleting a trace, a window or a saved run removes from the library (counted inside the
/// same transaction as the delete, or by the *_removal preview functions).
struct Removal {
    std::size_t traces = 0;   ///< 1 for delete_trace, else 0
    std::size_t windows = 0;  ///< windows with their sample lists
    std::size_t runs = 0;     ///< saved runs (finished, cancelled or failed) with their results and history
    std::size_t plans = 0;    ///< stored plans (plan JSON) of those runs
    std::size_t samples = 0;  ///< samples with their counts and routes (delete_trace only)
    std::size_t measured = 0; ///< measured steps stored beside the windows (schema 6 on)
    /// The deletion's item in the trash file it was given (Library::restore_deleted); 0 without one.
    std::int64_t trash_item = 0;
};

/// Whether a load reads the samples' per-token routes (Load) or leaves Trace::routes empty (Skip).
enum class RouteLoading { Load, Skip };
/// RouteLoading::Load when a plan on `topology` uses routes (more than one node), else RouteLoading::Skip.
inline RouteLoading routes_for(const Topology& topology) {
    return topology.nodes() > 1 ? RouteLoading::Load : RouteLoading::Skip;
}

/// Another connection holds the library's write lock past the busy timeout (SQLITE_BUSY /
/// SQLITE_LOCKED): "<file>: library is in use by another process (<sqlite message>) while <what>;
/// try again". A caller may retry the same call later.
class LibraryBusy : public InputError {
public:
    using InputError::InputError;
};

/// The library cannot be written: its file or folder is read-only to this process, or it was
/// opened with OpenMode::ReadOnly. The message is "<file>: library is read-only (cannot write)".
/// A caller that only reads may open the library again with OpenMode::ReadOnly.
class LibraryReadOnly : public InputError {
public:
    explicit LibraryReadOnly(const std::filesystem::path& file)
        : InputError(file.string() + ": library is read-only (cannot write)") {}
};

/// How Library::open treats the file.
enum class OpenMode {
    Create,    ///< read-write; an absent file becomes a new, empty library
    ReadWrite, ///< read-write; MissingFileError "<file>: no such library" when absent, and
               ///< "<file>: not a RoutePack library (empty file)" for an existing 0-byte file
               ///< (only Create turns an empty file into a library)
    ReadOnly,  ///< reads only, through an SQLITE_OPEN_READONLY connection that never changes the
               ///< file's bytes: no write, no migration, no checkpoint (not even of a -wal file
               ///< beside it); works on read-only files and folders. Without a -wal file the
               ///< library is read as immutable and no -wal/-shm is created; with one it is
               ///< read through it (SQLite may create the -shm), and when what it then reads is
               ///< not a readable library (e.g. the -wal belongs to another database):
               ///< "<file>: cannot be read with the write-ahead log beside it (<file>-wal):
               ///< <why>; nothing was changed (...)". Every write fails with LibraryReadOnly;
               ///< an existing 0-byte file: "<file>: not a RoutePack
               ///< library (empty file)"
};

class Library {
public:
    /// Opens (creating when `create` and the file is absent) a library file, applies pending
    /// migrations in one transaction, runs PRAGMA quick_check. InputError naming the file when it
    /// is not an SQLite database, fails quick_check, or was written by a newer schema version.
    /// Same as open(file, create ? OpenMode::Create : OpenMode::ReadWrite).
    static std::unique_ptr<Library> open(const std::filesystem::path& file, bool create = true);
    /// Opens in the given mode. The writable modes refuse up front, with LibraryReadOnly, a file or folder the process
    /// cannot write (so that no -wal/-shm files are left behind), and with the ReadOnly message "<file>: cannot be read
    /// with the write-ahead log beside it (...)" a library whose -wal does not read as a RoutePack library (a
    /// read-write connection would checkpoint it into the file); ReadOnly reads a library of an older schema version as
    /// it is (reads use only tables of version 1) and refuses a file without any schema.
    static std::unique_ptr<Library> open(const std::filesystem::path& file, OpenMode mode);
    /// Removes the library file `file` (and its -wal/-shm side files) when no writer has it open:
    /// under its writer lock held exclusively (waiting up to the busy timeout, then LibraryBusy
    /// "<file>: library is in use by another process (...)"), so nothing another process is writing
    /// is lost. Nothing happens when the file is absent. Used to replace a library whole (the demo).
    static void remove_unused(const std::filesystem::path& file);
    ~Library();
    Library(const Library&) = delete;
    Library& operator=(const Library&) = delete;

    int schema_version() const;
    /// How long a statement waits for another connection's lock before it fails with LibraryBusy
    /// (default 5000 ms). A connection used on a GUI thread sets a short one (e.g. 200 ms) so
    /// that a busy library is reported at once instead of freezing the window.
    void set_busy_timeout_ms(int ms);
    int busy_timeout_ms() const { return busy_timeout_ms_; }
    const std::filesystem::path& path() const { return path_; }
    bool read_only() const { return read_only_; }
    /// True when this open made the file (OpenMode::Create on a path where no file existed).
    bool created() const { return created_; }

    /// Removes the library file when this open created it (created()) and nothing was ever
    /// committed into it by anyone: no trace, topology or run. A failed import into a new path
    /// calls it so that it leaves nothing behind. Nothing another process committed is ever
    /// removed: every writable open holds the library's writer lock (the file "<file>-lock"
    /// beside it, flock) shared for its whole life, and the check and the removal run under that
    /// lock held exclusively; while another writer (of any process) has the library open, the
    /// file is kept. Returns true when the file was removed; the Library is then closed and may
    /// only be destroyed.
    bool discard_if_created_and_empty();

    /// Imports files/folders as trace `name` atomically: everything lands or nothing does (one
    /// transaction; failure, cancellation or a killed process leave the file as before).
    /// InputError when the name is taken or the same bytes were already imported (names the
    /// existing trace), plus every importer error. Throws Cancelled when `cancel` was set.
    ImportSummary import_trace(const std::string& name, const std::vector<std::filesystem::path>& inputs,
                               const ImportOptions& options, const ImportProgressFn& progress = {},
                               const std::atomic<bool>* cancel = nullptr);

    std::vector<TraceEntry> traces() const;
    /// InputError "no trace named 'X' in <file>" when absent.
    TraceEntry trace(const std::string& name) const;
    /// All samples' metadata in import order.
    std::vector<SampleInfo> samples(const std::string& trace) const;
    /// Whole trace (or the listed sample ids, in the given order) with counts, and with each sample's
    /// per-token routes (Trace::routes) when it was imported with them (schema version 3 on); a
    /// sample imported before has none (Trace::has_routes() false: communication figures n/a).
    /// InputError "...: damaged routes (...)" for a routes blob that does not decode. With
    /// RouteLoading::Skip the routes are not read (Trace::routes empty): they are only needed for
    /// communication figures on more than one node, and they can be far larger than the counts
    /// (width x tokens x MoE layers x top-k bytes per sample).
    Trace load_trace(const std::string& trace, RouteLoading routes = RouteLoading::Load) const;
    Trace load_samples(const std::string& trace, const std::vector<std::string>& sample_ids,
                       RouteLoading routes = RouteLoading::Load) const;
    /// Per-layer expert totals [L][E] (sum over samples, or the aggregate file's totals).
    std::vector<std::uint64_t> layer_totals(const std::string& trace) const;

    /// Defines a window. InputError for an unknown trace or sample id, a duplicate id in the list,
    /// an empty list, a name already used for that trace, or a load-only trace.
    WindowEntry create_window(const std::string& trace, const std::string& name,
                              const std::vector<std::string>& sample_ids, const std::string& definition);
    /// One window to create: name, sample ids in window order, definition text.
    struct WindowSpec {
        std::string name;
        std::vector<std::string> sample_ids;
        std::string definition;
    };
    /// Creates several windows of one trace in one transaction (all or none; the rules and errors of
    /// create_window, for each in order), e.g. the consecutive windows of `window --split`.
    std::vector<WindowEntry> create_windows(const std::string& trace, const std::vector<WindowSpec>& windows);
    std::vector<WindowEntry> windows(const std::string& trace = {}) const;
    std::vector<std::string> window_sample_ids(const std::string& trace, const std::string& window) const;
    Trace load_window(const std::string& trace, const std::string& window,
                      RouteLoading routes = RouteLoading::Load) const;

    // --- Topologies and planner runs (schema migration 2) ---

    /// Saves topology `name` (with the budgets kept beside it, if given) in one transaction. An
    /// existing name is updated when its topology is unchanged (budgets only) or no saved run uses
    /// it; otherwise InputError "topology 'X' is used by N saved run(s); save the change under
    /// another name". InputError for an empty name or an invalid topology (parse_topology rules).
    TopologyEntry save_topology(const std::string& name, const Topology& topology,
                                const std::optional<PlannerBudgets>& budgets = std::nullopt);
    /// Every saved topology, by name.
    std::vector<TopologyEntry> topologies() const;
    /// InputError "no topology named 'X' in <file>" when absent.
    TopologyEntry topology(const std::string& name) const;

    /// Saves a finished or cancelled planner run atomically: its topology (the row named
    /// `topology_name` when it holds the same topology, else any row holding it, else a new row
    /// under that name, or "<name> (2)", "(3)", ... when the name is taken by another topology),
    /// the plan (plan_to_json(result) and its key facts), the run row (status "cancelled" when
    /// result.cancelled, else "finished"), one run_results row per method and one
    /// annealing_history row per temperature level (chain 0 = the population aggregate).
    /// `started_at` defaults to now. InputError when the result's trace or window is not in the
    /// library (runs belong to windows), or the library is read-only.
    RunEntry save_run(const PlanResult& result, const std::string& topology_name, const std::string& started_at = {});
    /// Saves several finished or cancelled runs in one transaction, all or none, each as save_run
    /// saves one, in order (started now). `before_commit`, when given, runs inside the transaction
    /// with the new run ids in the same order: whatever it throws rolls every run back and
    /// propagates (a sweep writes its output folder there and stops there on a signal). Returns the
    /// run ids. Errors as save_run.
    /// With `whole` the runs are also stored as one whole run (save_whole_run), in the same
    /// transaction; its id lands in *whole_run_id.
    std::vector<std::int64_t> save_runs(const std::vector<const PlanResult*>& results, const std::string& topology_name,
                                        const std::function<void(const std::vector<std::int64_t>&)>& before_commit = {},
                                        const WholeRunSpec* whole = nullptr, std::int64_t* whole_run_id = nullptr);
    /// Stores saved runs `run_ids` (in run order, one trace, at least one) as one whole run; returns
    /// its id. Its trace, topology and topology JSON are the first run's. InputError "no run N in
    /// <file>", "a whole run needs at least one step", "run N is of trace 'B', not 'A'" (steps of
    /// several traces), rename_run's name errors (setting "whole run name"); LibraryReadOnly.
    std::int64_t save_whole_run(const WholeRunSpec& spec, const std::vector<std::int64_t>& run_ids);
    /// Every whole run, by id; empty below schema 7 (a read-only open of an older library).
    std::vector<WholeRunEntry> whole_runs() const;
    /// One whole run; InputError "no whole run N in <file>" when absent.
    WholeRunEntry whole_run(std::int64_t id) const;
    /// Names whole run `id` (rename_run's rules, setting "whole run name"); "" unnames it.
    void rename_whole_run(std::int64_t id, const std::string& new_name);
    /// Saves a run that failed with `message` (no plan, no results), same topology rule. Budgets out
    /// of their ranges are refused before anything is written (check_planner_budgets, origin
    /// "<file>: failed run's budgets", workers unchecked), so runs() can always read the window's runs.
    RunEntry save_failed_run(const std::string& trace, const std::string& window, const std::string& topology_name,
                             const Topology& topology, const PlannerBudgets& budgets, const std::string& message,
                             const std::string& started_at = {});
    /// Runs of one window, oldest first. InputError for an unknown trace or window.
    std::vector<RunEntry> runs(const std::string& trace, const std::string& window) const;
    /// One run by id; InputError "no run N in <file>" when absent.
    RunEntry run(std::int64_t run_id) const;
    /// The plan JSON a run produced (plan_to_json text, parse_plan reads it). InputError when the
    /// run is unknown or produced no plan.
    std::string run_plan_json(std::int64_t run_id) const;

    // --- Deleting and renaming (storage/library_edit.cpp) ---
    // Each call is one transaction: everything it names changes, or nothing does. Writable modes
    // only (LibraryReadOnly otherwise). Saved topologies and imported cluster runs are never touched.

    /// What delete_trace / delete_window / delete_run would remove now (nothing is changed). Errors as
    /// the deletes' for an unknown trace, window or run.
    Removal trace_removal(const std::string& trace) const;
    Removal window_removal(const std::string& trace, const std::string& window) const;
    Removal run_removal(std::int64_t run_id) const;
    /// Deletes trace `trace` with its samples, source files, totals, windows and their saved runs
    /// and plans (and its model row when no other trace shares it). InputError "no trace named 'X'
    /// in <file>" when absent. Returns what was removed.
    /// With `trash` (an SQLite file of the caller's, created when absent), every row the delete removes
    /// is first copied there as one item (Removal::trash_item), in the same transaction, so that
    /// restore_deleted can put it back; the studio keeps one trash file per open library.
    Removal delete_trace(const std::string& trace, const std::filesystem::path& trash = {});
    /// Deletes one window with its saved runs and plans; the trace's samples stay. InputError "trace
    /// 'X' has no window named 'W' in <file>" (or the unknown-trace error) when absent.
    Removal delete_window(const std::string& trace, const std::string& window, const std::filesystem::path& trash = {});
    /// Deletes one saved run with its results, annealing history and its plan (unless another run
    /// holds the same plan). InputError "no run N in <file>" when absent.
    Removal delete_run(std::int64_t run_id, const std::filesystem::path& trash = {});
    /// Puts back item `item` of trash file `trash` (a delete_* given that file): every row with its
    /// id, parents first, in one transaction, and removes the item from the trash. Returns what it
    /// restored ("trace 'ds'", "window 'w' of trace 'ds'", "run 7"). InputError: "nothing to restore:
    /// item N is not in <trash>", "cannot restore X: it was deleted from <file>, not <this file>",
    /// "cannot restore X: the library changed since it was deleted (<SQLite's words>)" when a row's
    /// id or name is taken meanwhile (nothing is restored then); LibraryReadOnly.
    std::string restore_deleted(const std::filesystem::path& trash, std::int64_t item);
    /// Renames a trace. Every stored plan of its windows is rewritten so that its inputs.trace names
    /// the new name (the plan JSON otherwise byte-identical). InputError for an unknown trace, an
    /// empty or non-UTF-8 name, or "trace 'NEW' already exists in <file>"; same name: nothing changes.
    void rename_trace(const std::string& trace, const std::string& new_name);
    /// Renames a window of a trace; its stored plans' inputs.window follow. InputError for an unknown
    /// trace or window, an empty or non-UTF-8 name, or "trace 'T' already has a window named 'NEW' in
    /// <file>"; same name: nothing changes.
    void rename_window(const std::string& trace, const std::string& window, const std::string& new_name);
    /// Names saved run `run_id` (RunEntry::name; schema migration 5): the studio shows it beside the
    /// run's id ("run 11 · baseline-seed-1"); nothing else of the run or its plan changes. Names need
    /// not be unique (the id tells runs apart). The name is checked as given (callers trim user input):
    /// InputError naming the setting "run name" (key "run_name"):
    ///   "run name must not be empty"
    ///   "run name ' x' must not begin or end with white space"
    ///   "run name is 81 characters long, more than 80" (UTF-8 characters)
    ///   "run name 'a\nb' must not contain control characters"
    ///   "run name '...' is not valid UTF-8 (byte 0x.. at index N)"
    /// and "no run N in <file>" when absent. Same name: nothing changes.
    void rename_run(std::int64_t run_id, const std::string& new_name);
    /// Longest run name rename_run accepts, in UTF-8 characters.
    static constexpr std::size_t kMaxRunNameLength = 80;

    // --- Runs swept on a cluster (schema migration 4; storage/cluster_runs.cpp) ---

    /// Stores the cluster run whose output folder is `out` (python3 -m routepack.run sweep --out,
    /// docs/cluster-runs.md): its settings (OUT/run.json), its chains with their topologies and
    /// one row per chain and step (OUT/summary.json's lines), with each planned step's plan file
    /// name; no counts, no plan text. Every field is checked before anything is written
    /// (read_cluster_run_folder's errors); one transaction. A run is known by OUT's absolute path
    /// (symbolic links resolved): importing the same OUT again replaces its rows and keeps its id
    /// (ClusterRunImport::Replaced), or changes nothing when run.json and summary.json hold the same
    /// bytes as at the last import (Unchanged). LibraryReadOnly on a read-only library.
    ClusterRunImport import_cluster_run(const std::filesystem::path& out);
    /// Every imported cluster run, in the order first imported (chains filled in); empty for a library
    /// opened read-only at a schema version below 4.
    std::vector<ClusterRunEntry> cluster_runs() const;
    /// One imported cluster run; InputError "no cluster run N in <file>" when absent.
    ClusterRunEntry cluster_run(std::int64_t id) const;
    /// The steps of cluster run `id` as the Run view lists them: chain by chain (the summary's
    /// chain order), each chain's steps in run order, planned and failed alike. A planned step's
    /// plan_file is OUT/<chain>/<file> (a plan file parse_plan reads; the library keeps no counts,
    /// so views that need them import the step's file, step_path). InputError "no cluster run N in
    /// <file>" when absent.
    std::vector<ClusterRunStep> cluster_run_steps(std::int64_t id) const;

    /// Stores a measured file (docs/measure.md "The measured file") beside the window it measured:
    /// `text` is the file's text, `file` its path. The window is the library's window of the file's
    /// window.trace and window.window, and must be that window (parse_measured with the window's
    /// fingerprint: "<file>: window.fingerprint is X, the window's is Y: a measurement of another
    /// window"); every other check of parse_measured applies. Each plan is linked to the saved run
    /// and method whose layout it measured, when one is found among the window's runs on the same
    /// topology (layout_pieces of each method the run holds, the paper's four and the communication
    /// ones, against the plan's pieces: same_pieces). The text is stored as it is, in one transaction; the same text
    /// for the same window again changes nothing (MeasuredImport::unchanged). InputError "<file>: window
    /// '<trace>/<window>' is not in <library>" when the library lacks it; LibraryReadOnly.
    MeasuredImport import_measured(const std::string& text, const std::filesystem::path& file);
    /// Stores the step that torch.profiler Chrome traces recorded (docs/measure.md "Profiler
    /// ranges"): `plan_text` is a plan file's text (`plan_file` its path) whose window is in the
    /// library (restore_plan against it: "<plan>: the saved plan does not match its window (...)"),
    /// `method` the method whose layout ran (a method key: "baseline", "reorder", "karmarkar_karp",
    /// "routepack", "grouter", "routepack+comm"; InputError "unknown method 'x' (...)" otherwise,
    /// "<plan>: the plan has no grouter layout" for a communication method the plan lacks). The pieces are
    /// layout_pieces of that layout on the plan's topology, their seconds fill_from_profiler's (its errors) from the
    /// step ranges of plan `step` ("" = `method`), the measured plan named so; the step is stored as a measured file
    /// with shapes null and timing {clock "torch.profiler host ranges" or "torch.profiler device ranges", statistic
    /// "median", repeats, warmup 0}, then as import_measured stores one (source "profiler", files: the plan, then the
    /// traces).
    MeasuredImport import_profiler(const std::string& plan_text, const std::filesystem::path& plan_file,
                                   const std::string& method, const std::string& step,
                                   const std::vector<ProfilerTraceFile>& traces,
                                   const std::vector<std::filesystem::path>& trace_files);
    /// The measured steps stored for a window (every window when `trace` is empty), oldest first;
    /// empty for a library opened read-only at a schema version below 6.
    std::vector<MeasuredStepEntry> measured_steps(const std::string& trace = {}, const std::string& window = {}) const;
    /// The stored measured file of step `id`, read back (parse_measured); InputError "no measured
    /// step N in <file>" when absent.
    MeasuredStep measured_step(std::int64_t id) const;
    /// The library's record of measured step `id`; the same InputError when absent.
    MeasuredStepEntry measured_entry(std::int64_t id) const;

    /// Test hook: when > 0, import throws after that many samples were written (inside the
    /// transaction), so tests can prove atomicity under a failure mid-import.
    void set_fail_after_samples_for_testing(std::size_t n) { fail_after_ = n; }

private:
    Library(sqlite3* db, std::filesystem::path path);
    /// The write of import_measured / import_profiler: links the runs, then one transaction.
    MeasuredImport store_measured(const MeasuredStep& m, const std::string& text, const Trace& window,
                                  std::int64_t window_id, const char* source,
                                  const std::vector<std::filesystem::path>& files);
    sqlite3* db_ = nullptr;
    std::filesystem::path path_;
    bool read_only_ = false;
    bool created_ = false;
    int writer_lock_fd_ = -1;         ///< "<file>-lock", flock shared while open (writable opens)
    bool side_files_existed_[2] = {}; ///< -wal, -shm existed before this open created the file
    int busy_timeout_ms_ = 0;
    std::size_t fail_after_ = 0;
};

} // namespace routepack::storage
