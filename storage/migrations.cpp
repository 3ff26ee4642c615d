// The schema of a RoutePack library, as numbered migrations compiled into the program.
// Rules: a migration is never edited once released (a fix is a new migration); every migration
// runs inside the single transaction of apply_migrations(); user_version = the last one applied.
#include "storage/migrations.h"

#include "core/util/errors.h"
#include "storage/sqlite_util.h"

#include <string>

namespace routepack::storage::detail {

namespace {

// Migration 1: traces and windows.
//   models          one row per distinct model description (shared by traces)
//   traces          one row per imported trace; load_only = aggregate totals only (no samples)
//   source_files    the imported files, in import order, with their sizes
//   samples         one row per sample, metadata columns + `counts`, ONE blob a[l][e] [L][E]
//                   (format: storage/counts_codec.h, tag 0x01)
//   aggregate_totals  per-layer expert totals L[l][e] [L][E] of every trace (tag 0x02 blob): the
//                   aggregate file's own totals for load-only traces, the sum over samples
//                   (computed during the import) for per-sample traces
//   windows         named optimizer-step windows of one trace
//   window_samples  their samples, in window order
constexpr const char* kMigration1 = R"sql(
CREATE TABLE models (
    id                INTEGER PRIMARY KEY,
    name              TEXT    NOT NULL,
    num_hidden_layers INTEGER NOT NULL CHECK (num_hidden_layers > 0),
    experts           INTEGER NOT NULL CHECK (experts > 0),
    top_k             INTEGER NOT NULL CHECK (top_k >= 0),  -- 0: unknown (aggregate totals do not say)
    moe_layers        TEXT    NOT NULL,  -- JSON array of absolute decoder-layer ids, ascending
    source            TEXT    NOT NULL,
    UNIQUE (name, num_hidden_layers, experts, top_k, moe_layers, source)
);

CREATE TABLE traces (
    id             INTEGER PRIMARY KEY,
    name           TEXT    NOT NULL UNIQUE CHECK (name <> ''),
    format         TEXT    NOT NULL,               -- importer name, to_string(TraceFormat)
    load_only      INTEGER NOT NULL DEFAULT 0 CHECK (load_only IN (0, 1)),
    model_id       INTEGER NOT NULL REFERENCES models(id) ON DELETE RESTRICT,
    sample_count   INTEGER NOT NULL DEFAULT 0,
    fingerprint    TEXT    NOT NULL DEFAULT '',    -- hex64 FNV-1a of the imported files' bytes
    imported_at    TEXT    NOT NULL,               -- UTC ISO-8601
    notes          TEXT    NOT NULL DEFAULT '[]',  -- JSON array of strings (importer notes)
    file_count     INTEGER NOT NULL DEFAULT 0,
    byte_count     INTEGER NOT NULL DEFAULT 0,
    missing_routes INTEGER NOT NULL DEFAULT 0,
    min_length     INTEGER NOT NULL DEFAULT 0,
    max_length     INTEGER NOT NULL DEFAULT 0,
    mean_length    REAL    NOT NULL DEFAULT 0
);
CREATE INDEX traces_by_fingerprint ON traces(fingerprint);
CREATE INDEX traces_by_model ON traces(model_id);

CREATE TABLE source_files (
    trace_id INTEGER NOT NULL REFERENCES traces(id) ON DELETE CASCADE,
    position INTEGER NOT NULL CHECK (position >= 0),
    path     TEXT    NOT NULL,
    size     INTEGER NOT NULL CHECK (size >= 0),      -- bytes
    PRIMARY KEY (trace_id, position)
) WITHOUT ROWID;

CREATE TABLE samples (
    id             INTEGER PRIMARY KEY,
    trace_id       INTEGER NOT NULL REFERENCES traces(id) ON DELETE CASCADE,
    position       INTEGER NOT NULL CHECK (position >= 0),  -- import order
    sample_id      TEXT    NOT NULL,
    length         INTEGER NOT NULL CHECK (length >= 0),    -- t_i, tokens
    routed_rows    INTEGER NOT NULL CHECK (routed_rows >= 0),
    prompt_len     INTEGER,                                 -- NULL when the source does not say
    request_id     TEXT    NOT NULL DEFAULT '',
    group_id       TEXT    NOT NULL DEFAULT '',
    source_file    TEXT    NOT NULL DEFAULT '',
    length_rule    TEXT    NOT NULL CHECK (length_rule IN ('explicit-tokens', 'rows-plus-one', 'rows')),
    missing_routes INTEGER NOT NULL DEFAULT 0 CHECK (missing_routes >= 0),
    counts         BLOB    NOT NULL,                        -- a[l][e], [L][E] LEB128, tag 0x01
    UNIQUE (trace_id, position),
    UNIQUE (trace_id, sample_id)
);

CREATE TABLE aggregate_totals (
    trace_id INTEGER PRIMARY KEY REFERENCES traces(id) ON DELETE CASCADE,
    source   TEXT NOT NULL DEFAULT '',  -- the aggregate file's own provenance ("src"), if any
    totals   BLOB NOT NULL              -- L[l][e], [L][E] LEB128 uint64, tag 0x02
);

CREATE TABLE windows (
    id           INTEGER PRIMARY KEY,
    trace_id     INTEGER NOT NULL REFERENCES traces(id) ON DELETE CASCADE,
    name         TEXT    NOT NULL CHECK (name <> ''),
    definition   TEXT    NOT NULL,     -- how it was made: "first 512", "random 64 seed 7", ...
    sample_count INTEGER NOT NULL CHECK (sample_count > 0),
    created_at   TEXT    NOT NULL,     -- UTC ISO-8601
    UNIQUE (trace_id, name)
);

CREATE TABLE window_samples (
    window_id  INTEGER NOT NULL REFERENCES windows(id) ON DELETE CASCADE,
    position   INTEGER NOT NULL CHECK (position >= 0),  -- order within the window
    sample_ref INTEGER NOT NULL REFERENCES samples(id) ON DELETE CASCADE,
    PRIMARY KEY (window_id, position),
    UNIQUE (window_id, sample_ref)
) WITHOUT ROWID;
CREATE INDEX window_samples_by_sample ON window_samples(sample_ref);
)sql";

// Migration 2: planning results.
//   topologies         named topologies (P, D, cap C, min rows + the full JSON: EDP shards, stages)
//   plans              plans made for a window on a topology (the versioned plan JSON + its key facts)
//   runs               one planner invocation (budgets, seed, workers, status, timings)
//   run_results        per run and method (baseline, reorder, karmarkar-karp, routepack): exact
//                      score tuple (eq. 15) and metrics JSON (eqs. 22-23)
//   annealing_history  per run, temperature level and chain: acceptance and best score so far
constexpr const char* kMigration2 = R"sql(
CREATE TABLE topologies (
    id          INTEGER PRIMARY KEY,
    name        TEXT    NOT NULL UNIQUE CHECK (name <> ''),
    ep_ranks    INTEGER NOT NULL CHECK (ep_ranks > 0),    -- P
    dp_slots    INTEGER NOT NULL CHECK (dp_slots > 0),    -- D
    cap_tokens  INTEGER NOT NULL CHECK (cap_tokens > 0),  -- C
    min_rows    INTEGER NOT NULL DEFAULT 0 CHECK (min_rows >= 0),
    definition  TEXT    NOT NULL,                         -- topology JSON (EDP shards, attention stages)
    created_at  TEXT    NOT NULL
);

CREATE TABLE plans (
    id           INTEGER PRIMARY KEY,
    window_id    INTEGER NOT NULL REFERENCES windows(id) ON DELETE CASCADE,
    topology_id  INTEGER NOT NULL REFERENCES topologies(id) ON DELETE RESTRICT,
    fingerprint  TEXT    NOT NULL,                       -- inputs' fingerprint, as in the plan JSON
    seed         INTEGER NOT NULL,
    workers      INTEGER NOT NULL CHECK (workers > 0),
    rows         INTEGER NOT NULL CHECK (rows > 0),      -- R*
    certified    INTEGER NOT NULL CHECK (certified IN (0, 1)),
    score_max_u  REAL    NOT NULL,                       -- max_g U_g
    score_sum_u  REAL    NOT NULL,                       -- sum_g U_g
    score_max_j  REAL    NOT NULL,                       -- max_{r,g} J_{r,g}
    plan_json    TEXT    NOT NULL,
    created_at   TEXT    NOT NULL
);
CREATE INDEX plans_by_window ON plans(window_id);
CREATE INDEX plans_by_topology ON plans(topology_id);

CREATE TABLE runs (
    id           INTEGER PRIMARY KEY,
    window_id    INTEGER NOT NULL REFERENCES windows(id) ON DELETE CASCADE,
    topology_id  INTEGER NOT NULL REFERENCES topologies(id) ON DELETE RESTRICT,
    plan_id      INTEGER REFERENCES plans(id) ON DELETE SET NULL,  -- the plan it produced, if any
    budgets      TEXT    NOT NULL,                                 -- JSON
    seed         INTEGER NOT NULL,
    workers      INTEGER NOT NULL CHECK (workers > 0),
    status       TEXT    NOT NULL CHECK (status IN ('running', 'finished', 'failed', 'cancelled')),
    message      TEXT    NOT NULL DEFAULT '',
    started_at   TEXT    NOT NULL,
    finished_at  TEXT,
    timings      TEXT                                              -- JSON, seconds per stage
);
CREATE INDEX runs_by_window ON runs(window_id);
CREATE INDEX runs_by_topology ON runs(topology_id);
CREATE INDEX runs_by_plan ON runs(plan_id);

CREATE TABLE run_results (
    run_id       INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    method       TEXT    NOT NULL CHECK (method IN ('baseline', 'reorder', 'karmarkar-karp', 'routepack')),
    rows         INTEGER NOT NULL CHECK (rows > 0),
    score_max_u  REAL    NOT NULL,
    score_sum_u  REAL    NOT NULL,
    score_max_j  REAL    NOT NULL,
    metrics      TEXT    NOT NULL,  -- JSON: CV_global, S_EP, T_EP, eta_EP, attention sum, joint
    PRIMARY KEY (run_id, method)
) WITHOUT ROWID;

CREATE TABLE annealing_history (
    run_id       INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    level        INTEGER NOT NULL CHECK (level >= 0),   -- temperature level index
    chain        INTEGER NOT NULL CHECK (chain >= 0),   -- population member
    temperature  REAL    NOT NULL,
    proposed     INTEGER NOT NULL CHECK (proposed >= 0),
    accepted     INTEGER NOT NULL CHECK (accepted >= 0),
    energy       REAL    NOT NULL,                      -- eq. 16 surrogate at the end of the level
    best_max_u   REAL    NOT NULL,                      -- trajectory-best exact score tuple
    best_sum_u   REAL    NOT NULL,
    best_max_j   REAL    NOT NULL,
    PRIMARY KEY (run_id, level, chain)
) WITHOUT ROWID;
)sql";

// Migration 3: per-token routes and the communication-aware methods.
//   sample_routes   one row per sample whose source had per-token routes: its top-k routes
//                   [L][tokens][K] in the narrowest id width, zlib-compressed (storage/counts_codec.h,
//                   tag 0x03). Samples imported before have no row: communication figures for them
//                   are "n/a (re-import the trace)". The counts blobs stay as they are.
//   run_results     rebuilt (SQLite cannot alter a CHECK) so that its method check also accepts
//                   'grouter' and 'routepack+comm'; rows are copied unchanged.
constexpr const char* kMigration3 = R"sql(
CREATE TABLE sample_routes (
    sample_ref INTEGER PRIMARY KEY REFERENCES samples(id) ON DELETE CASCADE,
    routes     BLOB    NOT NULL  -- [L][tokens][K] ids, tag 0x03: width, shape, zlib stream
);

CREATE TABLE run_results_v3 (
    run_id       INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    method       TEXT    NOT NULL CHECK (method IN ('baseline', 'reorder', 'karmarkar-karp', 'routepack',
                                                    'grouter', 'routepack+comm')),
    rows         INTEGER NOT NULL CHECK (rows > 0),
    score_max_u  REAL    NOT NULL,
    score_sum_u  REAL    NOT NULL,
    score_max_j  REAL    NOT NULL,
    metrics      TEXT    NOT NULL,  -- JSON: CV_global, S_EP, T_EP, eta_EP, attention sum, joint
    PRIMARY KEY (run_id, method)
) WITHOUT ROWID;
INSERT INTO run_results_v3 (run_id, method, rows, score_max_u, score_sum_u, score_max_j, metrics)
    SELECT run_id, method, rows, score_max_u, score_sum_u, score_max_j, metrics FROM run_results;
DROP TABLE run_results;
ALTER TABLE run_results_v3 RENAME TO run_results;
)sql";

// Migration 4: runs swept on a cluster (python3 -m routepack.run sweep), imported from their output
// folder OUT by `routepack import-run` (Library::import_cluster_run). No counts: the steps' files
// stay where the run left them, the plans in OUT.
//   cluster_runs        one row per imported OUT (its absolute path, unique): the run.json settings,
//                       step and chain counts, a fingerprint of summary.json's bytes
//   cluster_run_chains  its chains in summary order: the chain's folder name and its topology JSON
//   cluster_run_steps   one row per chain and step (summary.json's lines): planned or failed, max_g U
//                       per method, gains, moves, modelled seconds, the worker, the plan file's name
//                       in OUT/<chain>/ (planned) or the error (failed)
constexpr const char* kMigration4 = R"sql(
CREATE TABLE cluster_runs (
    id           INTEGER PRIMARY KEY,
    out_path     TEXT    NOT NULL UNIQUE CHECK (out_path <> ''),  -- OUT, absolute
    trace        TEXT    NOT NULL,            -- the plans' inputs.trace (run.json "trace")
    model        TEXT    NOT NULL,            -- run.json "model", JSON
    seed         INTEGER NOT NULL,            -- uint64 stored as the same 64 bits
    threads      INTEGER NOT NULL CHECK (threads > 0),
    budgets      TEXT    NOT NULL,            -- run.json "budgets", JSON object
    previous     TEXT    NOT NULL,            -- "identity" or "previous:<plan or map file>"
    step_count   INTEGER NOT NULL CHECK (step_count > 0),
    planned      INTEGER NOT NULL CHECK (planned >= 0),   -- lines planned (all chains)
    failed       INTEGER NOT NULL CHECK (failed >= 0),    -- lines failed (all chains)
    fingerprint  TEXT    NOT NULL,            -- hex64 FNV-1a of run.json and summary.json's bytes
    imported_at  TEXT    NOT NULL             -- UTC ISO-8601
);

CREATE TABLE cluster_run_chains (
    run_id     INTEGER NOT NULL REFERENCES cluster_runs(id) ON DELETE CASCADE,
    position   INTEGER NOT NULL CHECK (position >= 0),
    name       TEXT    NOT NULL CHECK (name <> ''),      -- the chain's folder in OUT
    topology   TEXT    NOT NULL,                         -- topology JSON
    PRIMARY KEY (run_id, position),
    UNIQUE (run_id, name)
) WITHOUT ROWID;

CREATE TABLE cluster_run_steps (
    run_id            INTEGER NOT NULL REFERENCES cluster_runs(id) ON DELETE CASCADE,
    chain             INTEGER NOT NULL CHECK (chain >= 0),     -- cluster_run_chains.position
    position          INTEGER NOT NULL CHECK (position >= 0),  -- the step's index in the run
    window_name       TEXT    NOT NULL CHECK (window_name <> ''),
    step_path         TEXT    NOT NULL DEFAULT '',             -- the step's file or folder, '' when not recorded
    status            TEXT    NOT NULL CHECK (status IN ('planned', 'failed')),
    samples           INTEGER CHECK (samples > 0),             -- planned steps only (else NULL)
    rows              INTEGER CHECK (rows > 0),
    certified         INTEGER CHECK (certified IN (0, 1)),
    max_u_baseline    REAL,                                    -- max_g U_g per method
    max_u_reorder     REAL,
    max_u_karmarkar_karp REAL,
    max_u_routepack   REAL,
    max_u_grouter     REAL,                                    -- more than one node only
    max_u_routepack_comm REAL,
    gain_vs_baseline_pct REAL,
    gain_vs_reorder_pct  REAL,
    lower_bound       REAL,
    experts_moved     INTEGER CHECK (experts_moved >= 0),
    migration_bytes   REAL,                                    -- with the topology's migration model only
    materialization_seconds REAL,
    compute_seconds   REAL,
    modelled_seconds  REAL,
    planner_seconds   REAL,
    task_seconds      REAL,
    time_limit_hit    INTEGER CHECK (time_limit_hit IN (0, 1)),
    worker            TEXT,
    previous_from     TEXT,                                    -- the step the placement started from
    plan_file         TEXT,                                    -- file name in OUT/<chain>/
    error             TEXT,                                    -- failed steps only
    stage             TEXT,                                    -- 'read' or 'plan' (failed; NULL when unknown)
    PRIMARY KEY (run_id, chain, position),
    FOREIGN KEY (run_id, chain) REFERENCES cluster_run_chains(run_id, position) ON DELETE CASCADE
) WITHOUT ROWID;
)sql";

// Migration 5: a name for each saved planner run, set by Library::rename_run ('' = unnamed; the
// run is then known by its id alone). Rows saved before keep ''.
constexpr const char* kMigration5 = R"sql(
ALTER TABLE runs ADD COLUMN name TEXT NOT NULL DEFAULT '';  -- trimmed, at most 80 characters
)sql";

// Migration 6: measured steps (docs/measure.md "In the library"), imported by `routepack
// import-measured` from a measured file (python3 -m routepack.torch.measure --out) or from
// torch.profiler traces with the plan they ran.
//   measured_steps   one per imported measurement of a window: where it came from, the measured
//                    file's text (the one format; a profiler import is stored in it too), its topology
//   measured_plans   its plans in file order: name, rows, measured step seconds, modelled max_g U,
//                    and the saved run and method whose layout it measured (same rows, cells and
//                    expert tokens per EP rank), when the library holds one
constexpr const char* kMigration6 = R"sql(
CREATE TABLE measured_steps (
    id           INTEGER PRIMARY KEY,
    window_id    INTEGER NOT NULL REFERENCES windows(id) ON DELETE CASCADE,
    source       TEXT    NOT NULL CHECK (source IN ('measured', 'profiler')),
    files        TEXT    NOT NULL,            -- JSON list of the imported files' absolute paths
    fingerprint  TEXT    NOT NULL,            -- hex64 FNV-1a of document
    topology     TEXT    NOT NULL,            -- topology JSON (the measured file's)
    document     TEXT    NOT NULL,            -- the measured file (format routepack-measured, version 1)
    imported_at  TEXT    NOT NULL,            -- UTC ISO-8601
    UNIQUE (window_id, fingerprint)
);

CREATE TABLE measured_plans (
    measured_id    INTEGER NOT NULL REFERENCES measured_steps(id) ON DELETE CASCADE,
    position       INTEGER NOT NULL CHECK (position >= 0),
    name           TEXT    NOT NULL,
    rows           INTEGER NOT NULL CHECK (rows > 0),
    step_seconds   REAL    NOT NULL CHECK (step_seconds >= 0),
    modelled_max_u REAL,                                              -- NULL when the file has none
    run_id         INTEGER REFERENCES runs(id) ON DELETE SET NULL,    -- the saved run it measured
    method         TEXT,                                              -- that run's method
    PRIMARY KEY (measured_id, position)
) WITHOUT ROWID;
CREATE INDEX measured_plans_by_run ON measured_plans(run_id);
)sql";

// Migration 7: whole runs. A sweep (`routepack sweep --db`), a run planned in the studio, and each
// chain of an imported cluster run are stored as one run of the library with an id and a name.
//   whole_runs        one per whole run: where it came from, its trace and topology (name and JSON),
//                     the settings that tell runs apart (settings JSON: seed, budgets, the placement
//                     step 0 started from, chained), for a cluster run's chain the run and chain
//   whole_run_steps   its steps in run order, each a saved run (sweep and studio; a cluster run's
//                     steps are its chain's cluster_run_steps). Deleting a step's run deletes the step;
//                     a whole run left without steps goes with its last one (trigger).
// The chains of cluster runs imported before become whole runs here; runs saved before stay step runs.
constexpr const char* kMigration7 = R"sql(
CREATE TABLE whole_runs (
    id             INTEGER PRIMARY KEY,
    name           TEXT    NOT NULL DEFAULT '',   -- '' = unnamed (known by its id)
    source         TEXT    NOT NULL CHECK (source IN ('sweep', 'studio', 'cluster')),
    trace          TEXT    NOT NULL,               -- the plans' inputs.trace
    topology       TEXT    NOT NULL CHECK (topology <> ''),  -- topology name (a cluster chain's folder)
    definition     TEXT    NOT NULL,               -- topology JSON
    settings       TEXT    NOT NULL,               -- JSON: seed, budgets, start, chained
    cluster_run    INTEGER REFERENCES cluster_runs(id) ON DELETE CASCADE,
    cluster_chain  INTEGER CHECK (cluster_chain >= 0),   -- cluster_run_chains.position
    created_at     TEXT    NOT NULL,
    UNIQUE (cluster_run, cluster_chain)
);

CREATE TABLE whole_run_steps (
    whole_run  INTEGER NOT NULL REFERENCES whole_runs(id) ON DELETE CASCADE,
    position   INTEGER NOT NULL CHECK (position >= 0),
    run_id     INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    PRIMARY KEY (whole_run, position)
) WITHOUT ROWID;
CREATE INDEX whole_run_steps_by_run ON whole_run_steps(run_id);

CREATE TRIGGER whole_run_emptied AFTER DELETE ON whole_run_steps
WHEN NOT EXISTS (SELECT 1 FROM whole_run_steps WHERE whole_run = OLD.whole_run)
BEGIN
    DELETE FROM whole_runs WHERE id = OLD.whole_run AND cluster_run IS NULL;
END;

INSERT INTO whole_runs (name, source, trace, topology, definition, settings, cluster_run, cluster_chain, created_at)
    SELECT '', 'cluster', r.trace, c.name, c.topology,
           json_object('seed', r.seed, 'budgets', json(r.budgets), 'start', r.previous, 'chained', json('true')),
           r.id, c.position, r.imported_at
    FROM cluster_runs r JOIN cluster_run_chains c ON c.run_id = r.id ORDER BY r.id, c.position;
)sql";

constexpr Migration kMigrations[] = {
    {1, "models, traces, source files, samples (counts blobs), aggregate totals, windows", kMigration1},
    {2, "topologies, plans, runs, run results, annealing history", kMigration2},
    {3, "per-token sample routes; run results accept grouter and routepack+comm", kMigration3},
    {4, "cluster runs imported from their output folder: settings, chains, per-step summary", kMigration4},
    {5, "a name for each saved planner run", kMigration5},
    {6, "measured steps of a window and their plans, linked to the saved runs they measured", kMigration6},
    {7, "whole runs: a sweep, a studio run or a cluster run's chain as one run with its steps", kMigration7},
};

int read_user_version(sqlite3* db, const std::filesystem::path& file) {
    Statement st(db, file, "PRAGMA user_version");
    return st.step() ? static_cast<int>(st.int64(0)) : 0;
}

} // namespace

std::span<const Migration> migrations() {
    return kMigrations;
}

int latest_schema_version() {
    return kMigrations[std::size(kMigrations) - 1].version;
}

int apply_migrations(sqlite3* db, const std::filesystem::path& file) {
    if (read_user_version(db, file) == latest_schema_version()) return latest_schema_version();
    Transaction tx(db, file);
    const int from = read_user_version(db, file); // again, now that we hold the write lock
    if (from > latest_schema_version())
        throw InputError(file.string() + ": library schema version " + std::to_string(from) +
                         " is newer than this build supports (" + std::to_string(latest_schema_version()) +
                         "); use a newer RoutePack Studio");
    if (from == latest_schema_version()) return from; // migrated by another process meanwhile
    for (const Migration& m : kMigrations) {
        if (m.version <= from) continue;
        char* err = nullptr;
        const int rc = sqlite3_exec(db, m.sql, nullptr, nullptr, &err);
        if (rc != SQLITE_OK) {
            const std::string msg = err ? err : sqlite3_errmsg(db);
            sqlite3_free(err);
            throw_sqlite(db, rc, file, "applying schema migration " + std::to_string(m.version) + " (" + msg + ")");
        }
    }
    // PRAGMAs take no parameters; the values are our own integers.
    exec(db, file, ("PRAGMA application_id = " + std::to_string(kApplicationId)).c_str());
    exec(db, file, ("PRAGMA user_version = " + std::to_string(latest_schema_version())).c_str());
    tx.commit();
    return latest_schema_version();
}

} // namespace routepack::storage::detail
