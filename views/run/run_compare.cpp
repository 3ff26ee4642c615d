#include "views/run/run_compare.h"

#include "core/model/trace.h"
#include "core/plan/budgets.h"
#include "core/plan/sweep_table.h"
#include "views/widgets/gui_text.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

namespace routepack::views {

const char* compare_metric_key(CompareMetric m) {
    switch (m) {
    case CompareMetric::MaxU:
        return "max_u";
    case CompareMetric::GainPct:
        return "vs_baseline_pct";
    case CompareMetric::ExpertsMoved:
        return "experts_moved";
    case CompareMetric::MigrationBytes:
        return "migration_bytes";
    case CompareMetric::ModelledSeconds:
        return "modelled_s";
    }
    return "max_u";
}

const char* compare_metric_title(CompareMetric m) {
    switch (m) {
    case CompareMetric::MaxU:
        return "max_g U (tokens)";
    case CompareMetric::GainPct:
        return "routepack vs baseline (%)";
    case CompareMetric::ExpertsMoved:
        return "experts moved";
    case CompareMetric::MigrationBytes:
        return "bytes moved";
    case CompareMetric::ModelledSeconds:
        return "modelled step (s)";
    }
    return "";
}

namespace {

/// "deepseek-v2-lite-ep16-dp8-2nodes (EP16/DP8, 2 nodes)".
std::string topology_words(const storage::WholeRunEntry& w) {
    std::string s = w.topology + " (EP" + std::to_string(w.topology_value.ep_ranks) + "/DP" +
                    std::to_string(w.topology_value.dp_slots);
    if (w.topology_value.nodes() > 1) s += ", " + std::to_string(w.topology_value.nodes()) + " nodes";
    return s + ")";
}

/// Index of `window` among run r's steps, or -1.
int step_of(const ComparedRun& r, const std::string& window) {
    for (std::size_t k = 0; k < r.series.steps.size(); ++k)
        if (r.series.steps[k].window == window) return static_cast<int>(k);
    return -1;
}

} // namespace

std::vector<std::string> whole_run_labels(const std::vector<storage::WholeRunEntry>& runs) {
    std::vector<std::string> out;
    // Whether a per-run text differs between the runs.
    auto differs = [&](auto text) {
        std::set<std::string> seen;
        for (const auto& w : runs)
            seen.insert(text(w));
        return seen.size() > 1;
    };
    const bool trace = differs([](const storage::WholeRunEntry& w) { return w.trace; });
    const bool topology = differs(topology_words);
    const bool seed = differs([](const storage::WholeRunEntry& w) { return std::to_string(w.settings.seed); });
    const bool source =
        differs([](const storage::WholeRunEntry& w) { return std::string(storage::whole_run_source_key(w.source)); });
    const bool start = differs([](const storage::WholeRunEntry& w) { return w.settings.start; });
    std::vector<const BudgetRow*> budgets;
    for (const BudgetRow& row : budget_table()) {
        const std::string key = row.key;
        if (key == "workers" || key == "max_moves") continue;
        if (differs([&](const storage::WholeRunEntry& w) { return budget_value_text(row, w.settings.budgets); }))
            budgets.push_back(&row);
    }
    for (const auto& w : runs) {
        std::string s = "whole run " + std::to_string(w.id) + (w.name.empty() ? "" : " '" + w.name + "'");
        if (trace) s += " · trace " + w.trace;
        if (topology) s += " · " + topology_words(w);
        if (seed) s += " · seed " + std::to_string(w.settings.seed);
        for (const BudgetRow* row : budgets)
            s += std::string(" · ") + row->key + " " + budget_value_text(*row, w.settings.budgets);
        s += w.settings.budgets.max_moves < 0 ? " · unlimited moves"
                                              : " · max moves " + std::to_string(w.settings.budgets.max_moves);
        if (source) s += std::string(" · ") + storage::whole_run_source_key(w.source);
        if (start) s += " · from " + w.settings.start;
        s += w.settings.chained ? " · chained" : " · not chained";
        out.push_back(std::move(s));
    }
    return out;
}

RunComparison compare_whole_runs(const storage::Library& lib, const std::vector<std::int64_t>& ids,
                                 const std::atomic<bool>* cancel) {
    RunComparison out;
    try {
        if (ids.size() < 2) throw std::invalid_argument("compare at least two whole runs");
        for (std::size_t i = 0; i < ids.size(); ++i)
            if (std::count(ids.begin(), ids.end(), ids[i]) > 1)
                throw std::invalid_argument("whole run " + std::to_string(ids[i]) + " is named twice");
        std::vector<storage::WholeRunEntry> entries;
        for (const std::int64_t id : ids)
            entries.push_back(lib.whole_run(id)); // an unknown id is refused before any plan is read
        const std::vector<std::string> labels = whole_run_labels(entries);
        std::set<std::string> windows;
        for (std::size_t i = 0; i < ids.size(); ++i) {
            RunSeriesSet set = compute_whole_run_series(lib, ids[i], cancel);
            if (cancel && cancel->load()) throw std::invalid_argument("cancelled");
            if (!set.error.empty())
                throw std::invalid_argument("whole run " + std::to_string(ids[i]) + ": " + set.error);
            if (set.series.empty())
                throw std::invalid_argument("whole run " + std::to_string(ids[i]) + " has no planned step");
            ComparedRun r{entries[i], std::move(set.series.front()), labels[i]};
            for (const RunStep& st : r.series.steps)
                windows.insert(st.window);
            out.runs.push_back(std::move(r));
        }
        out.windows.assign(windows.begin(), windows.end());
        std::sort(out.windows.begin(), out.windows.end(), natural_less);
    } catch (const std::exception& e) {
        out.runs.clear();
        out.windows.clear();
        out.error = cancel && cancel->load() ? "cancelled" : guiErrorText(e).toStdString();
    }
    return out;
}

std::optional<double> compare_value(const ComparedRun& r, const std::string& window, CompareMetric m) {
    const int k = step_of(r, window);
    if (k < 0) return std::nullopt;
    const auto i = static_cast<std::size_t>(k);
    const RunStep& st = r.series.steps[i];
    const SweepLine* line = i < r.series.table.size() ? &r.series.table[i] : nullptr;
    switch (m) {
    case CompareMetric::MaxU:
        return st.cost[Method::RoutePack];
    case CompareMetric::GainPct:
        return st.gain_pct;
    case CompareMetric::ExpertsMoved:
        if (line) return static_cast<double>(line->moves);
        return std::nullopt;
    case CompareMetric::MigrationBytes:
        return line ? line->migration_bytes : std::nullopt;
    case CompareMetric::ModelledSeconds:
        return line ? line->modelled_s : std::nullopt;
    }
    return std::nullopt;
}

std::optional<double> compare_total(const ComparedRun& r, CompareMetric m, const std::vector<std::string>& windows) {
    double sum = 0;
    int n = 0;
    for (const RunStep& st : r.series.steps) {
        if (!windows.empty() && std::find(windows.begin(), windows.end(), st.window) == windows.end()) continue;
        if (const auto v = compare_value(r, st.window, m)) {
            sum += *v;
            ++n;
        }
    }
    if (n == 0) return std::nullopt;
    return m == CompareMetric::GainPct ? sum / n : sum;
}

std::optional<double> compare_difference(const RunComparison& c, std::size_t i, const std::string& window,
                                         CompareMetric m) {
    if (i >= c.runs.size() || c.runs.empty()) return std::nullopt;
    const auto a = compare_value(c.runs.front(), window, m), b = compare_value(c.runs[i], window, m);
    if (!a || !b) return std::nullopt;
    return *b - *a;
}

std::optional<double> compare_total_difference(const RunComparison& c, std::size_t i, CompareMetric m) {
    if (i >= c.runs.size() || c.runs.empty()) return std::nullopt;
    std::vector<std::string> both;
    for (const std::string& w : c.windows)
        if (compare_value(c.runs.front(), w, m) && compare_value(c.runs[i], w, m)) both.push_back(w);
    if (both.empty()) return std::nullopt;
    const auto a = compare_total(c.runs.front(), m, both), b = compare_total(c.runs[i], m, both);
    if (!a || !b) return std::nullopt;
    return *b - *a;
}

namespace {

/// A cell of the CSV: empty for nullopt; else the metric's format.
std::string cell(const std::optional<double>& v, CompareMetric m) {
    if (!v || !std::isfinite(*v)) return "";
    char buf[64];
    switch (m) {
    case CompareMetric::GainPct:
        std::snprintf(buf, sizeof buf, "%.6f", *v);
        break;
    case CompareMetric::ExpertsMoved:
    case CompareMetric::MigrationBytes:
        std::snprintf(buf, sizeof buf, "%.0f", *v);
        break;
    default:
        std::snprintf(buf, sizeof buf, "%.17g", *v);
        break;
    }
    return buf;
}

} // namespace

std::string comparison_csv(const RunComparison& c) {
    if (c.runs.empty()) return "";
    std::string out = "step,window";
    const std::string first = std::to_string(c.runs.front().entry.id);
    for (const ComparedRun& r : c.runs)
        for (const CompareMetric m : kCompareMetrics)
            out += ",run" + std::to_string(r.entry.id) + "_" + compare_metric_key(m);
    for (std::size_t i = 1; i < c.runs.size(); ++i)
        for (const CompareMetric m : kCompareMetrics)
            out += ",run" + std::to_string(c.runs[i].entry.id) + "_minus_run" + first + "_" + compare_metric_key(m);
    out += "\r\n";
    for (std::size_t k = 0; k < c.windows.size(); ++k) {
        const std::string& w = c.windows[k];
        out += std::to_string(k) + "," + csv_field(w);
        for (const ComparedRun& r : c.runs)
            for (const CompareMetric m : kCompareMetrics)
                out += "," + cell(compare_value(r, w, m), m);
        for (std::size_t i = 1; i < c.runs.size(); ++i)
            for (const CompareMetric m : kCompareMetrics)
                out += "," + cell(compare_difference(c, i, w, m), m);
        out += "\r\n";
    }
    out += "total,";
    for (const ComparedRun& r : c.runs)
        for (const CompareMetric m : kCompareMetrics)
            out += "," + cell(compare_total(r, m), m);
    for (std::size_t i = 1; i < c.runs.size(); ++i)
        for (const CompareMetric m : kCompareMetrics)
            out += "," + cell(compare_total_difference(c, i, m), m);
    return out + "\r\n";
}

} // namespace routepack::views
