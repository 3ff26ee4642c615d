// `routepack import-run`: a run swept on a cluster (python3 -m routepack.run sweep --out OUT) into a
// library: its settings, chains and per-step summary, no counts (docs/cluster-runs.md).
#include "app/commands.h"

#include "core/util/errors.h"
#include "storage/library.h"

#include <CLI/CLI.hpp>

#include <iostream>
#include <memory>

namespace routepack::cli {

namespace {

struct ImportRunCmd {
    std::string db, out;
};

int run_import_run(const ImportRunCmd& c) {
    check_db_path(c.db);
    // A library this command creates is removed again when the import fails.
    std::unique_ptr<storage::Library> lib = storage::Library::open(c.db);
    storage::ClusterRunImport r;
    try {
        r = lib->import_cluster_run(c.out);
    } catch (...) {
        lib->discard_if_created_and_empty();
        throw;
    }
    const storage::ClusterRunEntry& run = r.run;
    const std::string what = "cluster run " + std::to_string(run.id) + " '" + shown(run.trace) + "'";
    switch (r.outcome) {
    case storage::ClusterRunImport::Outcome::Imported:
        std::cout << "imported " << what << " from " << shown_path(run.out.string()) << " into " << shown_path(c.db);
        break;
    case storage::ClusterRunImport::Outcome::Replaced:
        std::cout << "replaced " << what << " (imported before from " << shown_path(run.out.string()) << ") in "
                  << shown_path(c.db);
        break;
    case storage::ClusterRunImport::Outcome::Unchanged:
        std::cout << what << " from " << shown_path(run.out.string()) << " is already in " << shown_path(c.db)
                  << " as it is (nothing changed)";
        break;
    }
    std::cout << ": " << run.steps << " steps x " << run.chains.size() << " chains, " << run.planned << " planned, "
              << run.failed << " failed\n";
    if (run.failed > 0)
        for (const storage::ClusterRunStep& s : lib->cluster_run_steps(run.id))
            if (!s.planned)
                std::cout << "  failed: " << shown(s.chain_name) << " " << shown(s.window) << ": "
                          << shown_path(s.error) << "\n";
    return 0;
}

} // namespace

Command register_import_run(CLI::App& app) {
    auto c = std::make_shared<ImportRunCmd>();
    auto* sub = app.add_subcommand(
        "import-run", "import a cluster run's summary (python3 -m routepack.run sweep --out OUT) into a library");
    sub->add_option("out", c->out, "the run's output folder (OUT: run.json, summary.json, the plans)")->required();
    sub->add_option("--db", c->db, "library file (SQLite; created when absent)")->required();
    return {sub, [c] { return run_import_run(*c); }};
}

} // namespace routepack::cli
