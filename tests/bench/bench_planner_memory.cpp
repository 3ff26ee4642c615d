// Planner memory against window size: peak resident memory of one plan on 10k, 30k and 100k tiny
// samples (1-2 tokens, cap 64, 8 DP slots in 8 EDP shards, 4 MoE layers x 16 experts on 8 EP ranks),
// and its growth ratio against the 10k run (x3 and x10 samples: linear memory grows about x3 and x10,
// a [rows][samples] structure about x9 and x100).
//   bench_planner_memory [--sizes 10000,30000,100000] [--skip-plan] [--skip-polish]
// Each measurement runs in a child process (fork), so its peak (ru_maxrss of the child) is its own.
// Two measurements per size: (a) plan_window with the default budgets; (b) the final pass alone
// (iterated_straggler_search from FixedRowFFD at R*) with guide_table_bytes unlimited and at its
// default 128 MiB: the peak-demand table ([R*G][n] int64) is stored only while it is no larger than
// the window's demands q[n][L][P] (1 MiB at least), so both stay linear; before that bound the
// unlimited table made the planner quadratic (10k, 30k, 100k samples: 49, 272, 151 MiB of plan_window
// under the 128 MiB default).
#include "core/plan/planner.h"
#include "core/plan/score/placement.h"
#include "core/plan/search/polish.h"
#include "core/plan/search/rowcount.h"
#include "core/util/rng.h"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

using namespace routepack;

namespace {

PlanInput tiny_input(int n) {
    PlanInput in;
    Trace& w = in.window;
    w.model.name = "tiny";
    w.model.num_hidden_layers = 4;
    w.model.experts = 16;
    w.model.top_k = 1;
    w.model.moe_layers = {0, 1, 2, 3};
    Rng rng(7);
    w.counts.assign(static_cast<std::size_t>(n) * 4 * 16, 0);
    for (int i = 0; i < n; ++i) {
        SampleInfo s;
        s.id = std::to_string(i);
        s.length = 1 + static_cast<std::int64_t>(rng.below(2));
        s.routed_rows = s.length;
        for (int l = 0; l < 4; ++l)
            w.counts[(static_cast<std::size_t>(i) * 4 + l) * 16 + rng.below(16)] = static_cast<std::uint32_t>(s.length);
        w.samples.push_back(std::move(s));
    }
    in.trace_name = "tiny";
    in.window_name = "all";
    Topology& t = in.topology;
    t.ep_ranks = 8;
    t.dp_slots = 8;
    t.token_cap = 64;
    for (int d = 0; d < 8; ++d)
        t.edp_shards.push_back({d});
    t.attention_stages = {AttentionStage{"mla", 27.0, 27.0}};
    in.budgets.workers = 2;
    return in;
}

/// Runs `work` in a child process; returns its peak RSS in MiB and wall seconds (negative on failure).
std::pair<double, double> measure(const std::function<std::string()>& work, std::string* note) {
    int fds[2];
    if (pipe(fds) != 0) return {-1, 0};
    const auto t0 = std::chrono::steady_clock::now();
    const pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        std::string out;
        try {
            out = work();
        } catch (const std::exception& e) {
            out = std::string("error: ") + e.what();
        }
        if (write(fds[1], out.data(), out.size()) < 0) _exit(2);
        _exit(0);
    }
    close(fds[1]);
    char buf[512];
    ssize_t k = 0;
    note->clear();
    while ((k = read(fds[0], buf, sizeof buf)) > 0)
        note->append(buf, static_cast<std::size_t>(k));
    close(fds[0]);
    int status = 0;
    rusage ru{};
    wait4(pid, &status, 0, &ru);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return {-1, secs};
    return {static_cast<double>(ru.ru_maxrss) / 1024.0, secs};
}

} // namespace

int main(int argc, char** argv) {
    std::vector<int> sizes{10000, 30000, 100000};
    bool plan = true, polish = true;
    for (int a = 1; a < argc; ++a) {
        if (!std::strcmp(argv[a], "--skip-plan")) plan = false;
        if (!std::strcmp(argv[a], "--skip-polish")) polish = false;
        if (!std::strcmp(argv[a], "--sizes") && a + 1 < argc) {
            sizes.clear();
            for (const char* p = argv[++a]; *p;) {
                sizes.push_back(std::atoi(p));
                while (*p && *p != ',')
                    ++p;
                if (*p == ',') ++p;
            }
        }
    }
    struct Row {
        const char* what;
        std::function<std::string(int)> work;
    };
    std::vector<Row> rows;
    if (plan)
        rows.push_back({"plan_window (default budgets)", [](int n) {
                            const PlanResult r = plan_window(tiny_input(n));
                            return "R* " + std::to_string(r.rows.rows) + ", max_u " +
                                   std::to_string(r.routepack.metrics.score.max_u);
                        }});
    auto polish_run = [](int n, std::int64_t table) {
        const PlanInput in = tiny_input(n);
        const Placement pi = lpt_placement(aggregate_expert_loads(in.window.counts, in.window.size(), 4, 16), 4, 16, 8);
        const PackingProblem p = make_packing_problem(in.window, in.topology, pi);
        const RowCount rc = minimum_rows(p.length, p.C, p.D, 0, 1000000);
        PolishSettings s;
        s.evaluations = 40000;
        s.guide_table_bytes = table;
        const PolishResult r = iterated_straggler_search(p, rc.layout, s, 1);
        return "R* " + std::to_string(rc.rows) + ", evaluations " + std::to_string(r.evaluations);
    };
    if (polish) {
        rows.push_back({"final pass, guide_table_bytes unlimited",
                        [=](int n) { return polish_run(n, std::numeric_limits<std::int64_t>::max()); }});
        rows.push_back({"final pass, guide_table_bytes 128 MiB (default)",
                        [=](int n) { return polish_run(n, PolishSettings{}.guide_table_bytes); }});
    }
    for (const Row& row : rows) {
        std::printf("%s\n  %8s %12s %10s %8s  %s\n", row.what, "samples", "peak MiB", "x vs first", "seconds",
                    "result");
        double first = 0;
        for (int n : sizes) {
            std::string note;
            const auto [mib, secs] = measure([&] { return row.work(n); }, &note);
            if (first == 0 && mib > 0) first = mib;
            std::printf("  %8d %12.1f %10.2f %8.2f  %s\n", n, mib, mib > 0 && first > 0 ? mib / first : 0.0, secs,
                        note.c_str());
            std::fflush(stdout);
        }
    }
    return 0;
}
