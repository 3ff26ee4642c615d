#include "core/plan/profiler_trace.h"

#include "core/util/errors.h"
#include "core/util/json_field.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <tuple>

namespace routepack {

namespace {

using util::JsonField;

constexpr std::string_view kPrefix = "routepack:";
constexpr const char* kGrammar = "routepack:step:window=F:plan=NAME, routepack:attention:row=R:dp_slot=D or "
                                 "routepack:experts:row=R:edp_shard=G:moe_layer=L:ep_rank=P";

/// A routepack range name, parsed.
struct RangeName {
    enum class Kind { Step, Attention, Experts } kind = Kind::Step;
    std::string window, plan; ///< Step
    int row = 0, slot = 0;    ///< Attention: row, DP slot; Experts: row, EDP shard
    int layer = 0, rank = 0;  ///< Experts: absolute MoE layer, EP rank
};

/// "key=digits" at `s`; advances past it. Digits: 1 to 9 of them, no sign.
std::optional<int> field(std::string_view& s, std::string_view key) {
    if (s.substr(0, key.size()) != key || s.size() <= key.size() || s[key.size()] != '=') return std::nullopt;
    s.remove_prefix(key.size() + 1);
    std::size_t n = 0;
    while (n < s.size() && s[n] >= '0' && s[n] <= '9')
        ++n;
    if (n == 0 || n > 9) return std::nullopt;
    int v = 0;
    for (std::size_t i = 0; i < n; ++i)
        v = v * 10 + (s[i] - '0');
    s.remove_prefix(n);
    return v;
}

bool colon(std::string_view& s) {
    if (s.empty() || s.front() != ':') return false;
    s.remove_prefix(1);
    return true;
}

std::optional<RangeName> parse_range(std::string_view s) {
    s.remove_prefix(kPrefix.size());
    RangeName r;
    if (s.substr(0, 12) == "step:window=") {
        s.remove_prefix(12);
        const std::size_t cut = s.find(":plan=");
        if (cut == 0 || cut == std::string_view::npos || cut + 6 >= s.size()) return std::nullopt;
        r.window = std::string(s.substr(0, cut));
        r.plan = std::string(s.substr(cut + 6));
        return r;
    }
    const bool attention = s.substr(0, 10) == "attention:";
    if (!attention && s.substr(0, 8) != "experts:") return std::nullopt;
    s.remove_prefix(attention ? 10 : 8);
    r.kind = attention ? RangeName::Kind::Attention : RangeName::Kind::Experts;
    const auto row = field(s, "row");
    if (!row || !colon(s)) return std::nullopt;
    r.row = *row;
    const auto slot = field(s, attention ? "dp_slot" : "edp_shard");
    if (!slot) return std::nullopt;
    r.slot = *slot;
    if (!attention) {
        std::optional<int> layer, rank;
        if (!colon(s) || !(layer = field(s, "moe_layer")) || !colon(s) || !(rank = field(s, "ep_rank")))
            return std::nullopt;
        r.layer = *layer;
        r.rank = *rank;
    }
    if (!s.empty()) return std::nullopt;
    return r;
}

[[noreturn]] void fail_name(const JsonField& name, const std::string& what) {
    throw InputError(name.where() + " " + util::json_value_text(name.json()) + " " + what);
}

/// One routepack range of a file.
struct Range {
    RangeName name;
    double ts = 0, dur = 0;
    bool device = false;
    std::string where; ///< "<file>: traceEvents[i]"
};

/// The routepack ranges of one file, each field checked.
std::vector<Range> read_ranges(const ProfilerTraceFile& file) {
    const nlohmann::json doc = util::parse_json_document(file.text, file.origin);
    const JsonField top(doc, file.origin);
    const JsonField events = doc.is_object() ? top["traceEvents"] : top;
    if (!doc.is_object() && !doc.is_array())
        throw InputError(file.origin + ": not a Chrome trace (a list of events, or an object with traceEvents)");
    const std::size_t n = events.list("a list of trace events");
    std::vector<Range> out;
    for (std::size_t i = 0; i < n; ++i) {
        const JsonField e = events[i];
        const JsonField name = e["name"];
        if (!e.json().is_object() || !name.exists() || !name.json().is_string()) continue;
        const std::string& text = name.string();
        if (text.compare(0, kPrefix.size(), kPrefix) != 0) continue;
        const std::optional<RangeName> parsed = parse_range(text);
        if (!parsed) fail_name(name, std::string("is not a routepack range (") + kGrammar + ")");
        if (e["ph"].string() != "X")
            e["ph"].fail("\"X\" (a complete event: routepack ranges are record_function ranges)");
        Range r{*parsed, e["ts"].number(), e["dur"].number(0, std::numeric_limits<double>::max()), false, e.where()};
        r.device = e["cat"].exists() && e["cat"].json().is_string() && e["cat"].string() == "gpu_user_annotation";
        out.push_back(std::move(r));
    }
    return out;
}

} // namespace

std::string step_range_name(const std::string& fingerprint, const std::string& plan) {
    return "routepack:step:window=" + fingerprint + ":plan=" + plan;
}

namespace {

using PieceKey =
    std::tuple<int, int, int, int, int>; ///< kind (0 attention, 1 experts), row, slot or shard, layer, rank

PieceKey key_of(const RangeName& r) {
    return r.kind == RangeName::Kind::Attention ? PieceKey{0, r.row, r.slot, 0, 0}
                                                : PieceKey{1, r.row, r.slot, r.layer, r.rank};
}

PieceKey key_of(const MeasuredPiece& p) {
    return p.attention ? PieceKey{0, p.row, p.dp_slot, 0, 0} : PieceKey{1, p.row, p.edp_shard, p.moe_layer, p.ep_rank};
}

std::string range_of(const MeasuredPiece& p) {
    return p.attention
               ? "routepack:attention:row=" + std::to_string(p.row) + ":dp_slot=" + std::to_string(p.dp_slot)
               : "routepack:experts:row=" + std::to_string(p.row) + ":edp_shard=" + std::to_string(p.edp_shard) +
                     ":moe_layer=" + std::to_string(p.moe_layer) + ":ep_rank=" + std::to_string(p.ep_rank);
}

/// A piece range inside the step must name a piece of the plan.
void check_ids(const Range& r, const MeasuredPlan& plan, const Topology& t, const std::vector<int>& moe_layers) {
    const std::string at = r.where + ".name names ";
    if (r.name.row >= plan.rows)
        throw InputError(at + "row " + std::to_string(r.name.row) + "; the plan has " + std::to_string(plan.rows) +
                         " rows");
    if (r.name.kind == RangeName::Kind::Attention) {
        if (r.name.slot >= t.dp_slots)
            throw InputError(at + "DP slot " + std::to_string(r.name.slot) + "; the topology has " +
                             std::to_string(t.dp_slots));
        return;
    }
    if (r.name.slot >= t.shards())
        throw InputError(at + "EDP shard " + std::to_string(r.name.slot) + "; the topology has " +
                         std::to_string(t.shards()));
    if (!std::binary_search(moe_layers.begin(), moe_layers.end(), r.name.layer))
        throw InputError(at + "MoE layer " + std::to_string(r.name.layer) + ", not one of the window's MoE layers");
    if (r.name.rank >= t.ep_ranks)
        throw InputError(at + "EP rank " + std::to_string(r.name.rank) + "; the topology has " +
                         std::to_string(t.ep_ranks));
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

} // namespace

ProfilerTiming fill_from_profiler(MeasuredPlan& plan, const std::vector<ProfilerTraceFile>& traces,
                                  const std::string& fingerprint, const Topology& topology,
                                  const std::vector<int>& moe_layers) {
    std::map<PieceKey, std::vector<double>> durations[2]; // host, device
    std::set<std::string> other_windows, other_plans;
    std::string origins;
    bool any_step = false, matched = false;
    for (const ProfilerTraceFile& file : traces) {
        origins += (origins.empty() ? "" : ", ") + file.origin;
        const std::vector<Range> ranges = read_ranges(file);
        std::vector<std::pair<double, double>> steps;
        for (const Range& r : ranges) {
            if (r.name.kind != RangeName::Kind::Step) continue;
            any_step = true;
            if (r.name.window != fingerprint)
                other_windows.insert(r.name.window);
            else if (r.name.plan != plan.name)
                other_plans.insert(r.name.plan);
            else
                steps.emplace_back(r.ts, r.ts + r.dur);
        }
        matched = matched || !steps.empty();
        for (const Range& r : ranges) {
            if (r.name.kind == RangeName::Kind::Step) continue;
            const bool inside = std::any_of(steps.begin(), steps.end(),
                                            [&](const auto& s) { return r.ts >= s.first && r.ts + r.dur <= s.second; });
            if (!inside) continue;
            check_ids(r, plan, topology, moe_layers);
            durations[r.device ? 1 : 0][key_of(r.name)].push_back(r.dur);
        }
    }
    const std::string want = step_range_name(fingerprint, plan.name);
    if (!any_step)
        throw InputError(origins + ": no routepack:step range: wrap each step in record_function(\"" + want + "\")");
    if (!matched && other_plans.empty())
        throw InputError(origins + ": its routepack:step ranges are of window " + *other_windows.begin() +
                         ", not the plan's " + fingerprint + ": a trace of another window");
    if (!matched) {
        std::string names;
        for (const std::string& p : other_plans)
            names += (names.empty() ? "" : ", ") + p;
        throw InputError(origins + ": no range " + want + " (its steps of this window are of plans " + names + ")");
    }
    ProfilerTiming timing;
    timing.device = !durations[1].empty();
    const auto& source = durations[timing.device ? 1 : 0];
    timing.repeats = std::numeric_limits<int>::max();
    for (MeasuredPiece& pc : plan.pieces) {
        const auto it = source.find(key_of(pc));
        if (it == source.end()) {
            if (pc.tokens > 0)
                throw InputError(origins + ": no " + (timing.device ? "device-side " : "") + "range " + range_of(pc) +
                                 " inside " + want + " (the piece has " + std::to_string(pc.tokens) + " tokens)");
            pc.seconds = 0;
            continue;
        }
        pc.seconds = median(it->second) / 1e6;
        timing.repeats = std::min(timing.repeats, static_cast<int>(it->second.size()));
    }
    if (timing.repeats == std::numeric_limits<int>::max()) timing.repeats = 1;
    plan.step_seconds = compose_measured(plan, topology, moe_layers);
    return timing;
}

} // namespace routepack
