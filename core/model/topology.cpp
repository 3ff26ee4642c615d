#include "core/model/topology.h"

#include "core/util/input_file.h"

#include "core/model/limits.h"
#include "core/util/errors.h"
#include "core/util/json_field.h"
#include "core/util/resources.h"
#include "core/util/text.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <sstream>
#include <string_view>

namespace routepack {

std::vector<int> Topology::shard_of_slot() const {
    std::vector<int> out(static_cast<std::size_t>(dp_slots), -1);
    for (std::size_t g = 0; g < edp_shards.size(); ++g)
        for (int d : edp_shards[g])
            if (d >= 0 && d < dp_slots) out[static_cast<std::size_t>(d)] = static_cast<int>(g);
    return out;
}

int Topology::nodes() const {
    if (gpus_per_node > 0 && ep_ranks > 0) return std::max(1, ep_ranks / gpus_per_node);
    int n = 0;
    for (int v : ep_rank_nodes)
        n = std::max(n, v + 1);
    for (int v : dp_slot_nodes)
        n = std::max(n, v + 1);
    return std::max(n, 1);
}

std::vector<int> Topology::node_of_rank() const {
    std::vector<int> out(static_cast<std::size_t>(std::max(ep_ranks, 0)), 0);
    if (gpus_per_node > 0) {
        for (int p = 0; p < ep_ranks; ++p)
            out[static_cast<std::size_t>(p)] = p / gpus_per_node;
    } else if (ep_rank_nodes.size() == out.size()) {
        out = ep_rank_nodes;
    }
    return out;
}

std::vector<int> Topology::node_of_dp_slot() const {
    std::vector<int> out(static_cast<std::size_t>(std::max(dp_slots, 0)), 0);
    if (gpus_per_node > 0) {
        const std::int64_t n = nodes();
        for (int d = 0; d < dp_slots; ++d)
            out[static_cast<std::size_t>(d)] = static_cast<int>(d * n / dp_slots);
    } else if (dp_slot_nodes.size() == out.size()) {
        out = dp_slot_nodes;
    }
    return out;
}

namespace {

/// Largest EP rank and DP slot counts, experts per layer (as ModelDescription), token cap C (the
/// token limit of the importers: no cell holds more tokens than a trace can) and min_rows.
constexpr std::int64_t kMaxRanks = std::int64_t(1) << 20;
constexpr std::int64_t kMaxExpertsPerLayer = std::int64_t(1) << 20;
constexpr std::int64_t kMaxTokenCap = kMaxTokens;
constexpr std::int64_t kMaxMinRows = std::int64_t(1) << 30;
/// Most attention stages (a model has a handful of attention kinds; each costs a pass per cell).
constexpr std::size_t kMaxAttentionStages = 64;
/// Largest attention-stage alpha / beta (cost per token).
constexpr double kMaxStageCoefficient = 1e12;
/// Largest comm_weight (routepack+comm row cost term); keeps w * copies / C finite and far below DBL_MAX.
constexpr double kMaxCommWeight = 1e6;

/// The node list `f` ([expect] node ids, each in 0..max_id).
std::vector<int> need_node_list(const util::JsonField& f, std::size_t expect, int max_id, const char* counted) {
    const std::size_t n = f.list(std::string("a list of node ids, one per ") + counted);
    if (n != expect)
        throw InputError(f.where() + " lists " + std::to_string(n) + " nodes, expected one per " + counted + " (" +
                         std::to_string(expect) + ")");
    std::vector<int> out;
    out.reserve(expect);
    for (std::size_t k = 0; k < n; ++k) {
        const auto id = util::json_integer_of(f[k].json(), 0, max_id, util::IntegralFloats::Refuse);
        if (!id)
            f[k].fail("a node id in 0.." + std::to_string(max_id) +
                      " (a node holds at least one EP rank and one DP slot)");
        out.push_back(static_cast<int>(*id));
    }
    return out;
}

/// Reads gpus_per_node or ep_rank_nodes + dp_slot_nodes into `t` (P and D already read).
void parse_nodes(const util::JsonField& j, Topology& t, const std::string& origin) {
    const bool g = j["gpus_per_node"].exists(), r = j["ep_rank_nodes"].exists(), s = j["dp_slot_nodes"].exists();
    if (g && (r || s))
        throw InputError(origin + ": give either 'gpus_per_node' or the lists 'ep_rank_nodes' and 'dp_slot_nodes', "
                                  "not both");
    if (g) {
        t.gpus_per_node = static_cast<int>(j["gpus_per_node"].integer(1, t.ep_ranks));
        if (t.ep_ranks % t.gpus_per_node != 0)
            throw InputError(origin + ": field 'gpus_per_node' (" + std::to_string(t.gpus_per_node) +
                             ") must divide ep_ranks (" + std::to_string(t.ep_ranks) + ")");
        const int n = t.ep_ranks / t.gpus_per_node;
        if (t.dp_slots % n != 0)
            throw InputError(origin + ": dp_slots (" + std::to_string(t.dp_slots) + ") cannot be spread evenly over " +
                             std::to_string(n) + " nodes (ep_ranks / gpus_per_node = " + std::to_string(t.ep_ranks) +
                             " / " + std::to_string(t.gpus_per_node) + "); give ep_rank_nodes and dp_slot_nodes");
        return;
    }
    if (!r && !s) return;
    if (!r || !s)
        throw InputError(origin + ": field '" + std::string(r ? "ep_rank_nodes" : "dp_slot_nodes") + "' needs '" +
                         (r ? "dp_slot_nodes" : "ep_rank_nodes") + "' beside it");
    const int max_id = std::min(t.ep_ranks, t.dp_slots) - 1;
    t.ep_rank_nodes = need_node_list(j["ep_rank_nodes"], static_cast<std::size_t>(t.ep_ranks), max_id, "EP rank");
    t.dp_slot_nodes = need_node_list(j["dp_slot_nodes"], static_cast<std::size_t>(t.dp_slots), max_id, "DP slot");
    const int n = t.nodes();
    std::vector<char> has_rank(static_cast<std::size_t>(n), 0), has_slot(static_cast<std::size_t>(n), 0);
    for (int v : t.ep_rank_nodes)
        has_rank[static_cast<std::size_t>(v)] = 1;
    for (int v : t.dp_slot_nodes)
        has_slot[static_cast<std::size_t>(v)] = 1;
    for (int m = 0; m < n; ++m) {
        if (!has_rank[static_cast<std::size_t>(m)])
            throw InputError(origin + ": node " + std::to_string(m) +
                             " holds no EP rank in ep_rank_nodes (node ids 0.." + std::to_string(n - 1) +
                             " must each hold one)");
        if (!has_slot[static_cast<std::size_t>(m)])
            throw InputError(origin + ": node " + std::to_string(m) +
                             " holds no DP slot in dp_slot_nodes (node ids 0.." + std::to_string(n - 1) +
                             " must each hold one)");
    }
}

/// Reads the batch rules (BatchRules) into t.batch; their checks against each other come later
/// (check_batch_fields, once the row fields are read).
void parse_batch(const util::JsonField& j, Topology& t) {
    for (const auto& [key, out] : {std::pair<const char*, int*>{"samples_per_dp_slot", &t.batch.samples_per_dp_slot},
                                   {"samples_per_cell", &t.batch.samples_per_cell},
                                   {"max_samples_per_cell", &t.batch.max_samples_per_cell}})
        if (j[key].exists()) *out = static_cast<int>(j[key].integer(0, kMaxBatchCount));
    const util::JsonField o = j["oversize"];
    if (!o.exists()) return;
    const std::string& word = o.string();
    if (word == "refuse")
        t.batch.oversize = Oversize::Refuse;
    else if (word == "alone")
        t.batch.oversize = Oversize::Alone;
    else
        o.fail("\"refuse\" or \"alone\"");
}

/// The optional edp_shards field into t.edp_shards: a partition of the DP slots (one shard of every
/// slot when absent).
void parse_edp_shards(const util::JsonField& f, Topology& t, const std::string& origin) {
    if (!f.exists()) {
        std::vector<int> all(static_cast<std::size_t>(t.dp_slots));
        for (int d = 0; d < t.dp_slots; ++d)
            all[static_cast<std::size_t>(d)] = d;
        t.edp_shards.push_back(std::move(all));
        return;
    }
    const char* lists = "a non-empty list of lists of DP slots";
    const std::size_t shards = f.list(lists);
    if (shards == 0) f.fail(lists);
    std::vector<int> seen(static_cast<std::size_t>(t.dp_slots), -1);
    for (std::size_t g = 0; g < shards; ++g) {
        const util::JsonField shard_field = f[g];
        const std::size_t n = shard_field.list("a non-empty list of DP slots");
        if (n == 0) shard_field.fail("a non-empty list of DP slots");
        std::vector<int> shard;
        for (std::size_t k = 0; k < n; ++k) {
            const auto d = static_cast<int>(shard_field[k].integer(0, t.dp_slots - 1));
            if (seen[static_cast<std::size_t>(d)] >= 0)
                throw InputError(origin + ": DP slot " + std::to_string(d) + " is in edp_shards[" +
                                 std::to_string(seen[static_cast<std::size_t>(d)]) + "] and edp_shards[" +
                                 std::to_string(g) + "]; shards must partition the DP slots");
            seen[static_cast<std::size_t>(d)] = static_cast<int>(g);
            shard.push_back(d);
        }
        std::sort(shard.begin(), shard.end());
        t.edp_shards.push_back(std::move(shard));
    }
    for (int d = 0; d < t.dp_slots; ++d)
        if (seen[static_cast<std::size_t>(d)] < 0)
            throw InputError(origin + ": DP slot " + std::to_string(d) +
                             " is in no EDP shard; edp_shards must partition 0.." + std::to_string(t.dp_slots - 1));
}

/// The attention_stages field into t.attention_stages: at most kMaxAttentionStages of {name, alpha,
/// beta}, alpha and beta in [0, kMaxStageCoefficient] (costs stay finite: alpha * T + beta * Q for
/// any window, T, Q < 2^40 tokens, is far below DBL_MAX).
void parse_attention_stages(const util::JsonField& f, Topology& t) {
    const std::size_t n = f.list("a list of {name, alpha, beta}");
    if (n > kMaxAttentionStages)
        throw InputError(f.where() + " lists " + std::to_string(n) + " stages, at most " +
                         std::to_string(kMaxAttentionStages) + " are allowed");
    for (std::size_t s = 0; s < n; ++s) {
        const util::JsonField stage = f[s];
        stage.object("an object {name, alpha, beta}");
        stage.only({"name", "alpha", "beta"});
        AttentionStage a;
        a.name = stage["name"].exists() ? stage["name"].string() : "stage" + std::to_string(s);
        a.alpha = stage["alpha"].number(0, kMaxStageCoefficient);
        a.beta = stage["beta"].number(0, kMaxStageCoefficient);
        t.attention_stages.push_back(std::move(a));
    }
}

/// The optional "migration" object into t (MigrationModel): finite numbers in their ranges
/// (migration_min_value .. 1e15), expert_parameters an integer in 1..2^40.
void parse_migration(const util::JsonField& f, Topology& t) {
    if (!f.exists()) return;
    f.object();
    f.only({"state_bytes_per_param", "expert_parameters", "intra_node_GBps", "inter_node_GBps", "seconds_per_U",
            "achieved_TFLOPs", "plan_seconds", "planning"});
    t.has_migration = true;
    MigrationModel& m = t.migration;
    constexpr double kMax = 1e15;
    for (const auto& [key, out] : {std::pair<const char*, double*>{"state_bytes_per_param", &m.state_bytes_per_param},
                                   {"intra_node_GBps", &m.intra_node_GBps},
                                   {"inter_node_GBps", &m.inter_node_GBps},
                                   {"seconds_per_U", &m.seconds_per_U},
                                   {"achieved_TFLOPs", &m.achieved_TFLOPs}})
        if (f[key].exists()) *out = f[key].number(migration_min_value(key), kMax);
    if (f["expert_parameters"].exists()) m.expert_parameters = f["expert_parameters"].integer(1, std::int64_t{1} << 40);
    if (f["plan_seconds"].exists()) m.plan_seconds = f["plan_seconds"].number(0, kMax);
    if (const util::JsonField p = f["planning"]; p.exists())
        m.overlap_planning = planning_overlapped(p.string(), p.where());
}

} // namespace

bool planning_overlapped(const std::string& word, const std::string& where) {
    if (word != "overlapped" && word != "serial")
        throw InputError(where + " is \"" + util::printable(word) + "\", not \"overlapped\" or \"serial\"");
    return word == "overlapped";
}

double migration_min_value(std::string_view key) {
    if (key == "seconds_per_U") return 1e-12;
    return 1e-6;
}

void check_migration_model(const MigrationModel& m, const std::string& origin) {
    auto positive = [&](const char* key, double v) {
        if (!std::isfinite(v) || !(v >= migration_min_value(key)) || v > 1e15) {
            std::ostringstream got, lo;
            got << v;
            lo << migration_min_value(key);
            throw InputError(origin + ": migration." + key + " is " + got.str() + ", not a number in [" + lo.str() +
                             ", 1e+15]");
        }
    };
    positive("state_bytes_per_param", m.state_bytes_per_param);
    positive("intra_node_GBps", m.intra_node_GBps);
    positive("inter_node_GBps", m.inter_node_GBps);
    positive("achieved_TFLOPs", m.achieved_TFLOPs);
    if (m.seconds_per_U != 0) positive("seconds_per_U", m.seconds_per_U);
    if (!std::isfinite(m.plan_seconds) || m.plan_seconds < 0 || m.plan_seconds > 1e15) {
        std::ostringstream got;
        got << m.plan_seconds;
        throw InputError(origin + ": migration.plan_seconds is " + got.str() + ", not a number in [0, 1e+15]");
    }
    if (m.expert_parameters < 0 || m.expert_parameters > (std::int64_t{1} << 40))
        throw InputError(origin + ": migration.expert_parameters is " + std::to_string(m.expert_parameters) +
                         ", not an integer in 1..1099511627776");
}

Topology parse_topology(const std::string& json_text, const std::string& origin) {
    const nlohmann::json doc = util::parse_json_document(json_text, origin);
    if (!doc.is_object()) throw InputError(origin + ": a topology must be a JSON object");
    const util::JsonField j(doc, origin);
    // A misspelt optional field would silently fall back to its default (one node, no row multiple):
    // every field must be one this parser reads.
    j.only({"ep_ranks", "dp_slots", "token_cap", "experts_per_layer", "min_rows", "row_multiple", "gpus_per_node",
            "ep_rank_nodes", "dp_slot_nodes", "comm_weight", "comm_load_tolerance", "expert_invocation_tokens",
            "edp_shards", "attention_stages", "samples_per_dp_slot", "samples_per_cell", "max_samples_per_cell",
            "oversize", "migration"});
    Topology t;
    t.ep_ranks = static_cast<int>(j["ep_ranks"].integer(1, kMaxRanks));
    t.dp_slots = static_cast<int>(j["dp_slots"].integer(1, kMaxRanks));
    parse_batch(j, t);
    // With samples_per_cell the cap may be absent or 0 (the stack bounds a micro-batch by its count).
    if (j["token_cap"].exists() || t.batch.samples_per_cell == 0)
        t.token_cap = j["token_cap"].integer(t.batch.samples_per_cell > 0 ? 0 : 1, kMaxTokenCap);
    if (j["experts_per_layer"].exists())
        t.experts_per_layer = static_cast<int>(j["experts_per_layer"].integer(1, kMaxExpertsPerLayer));
    if (j["min_rows"].exists()) t.min_rows = static_cast<int>(j["min_rows"].integer(0, kMaxMinRows));
    if (j["row_multiple"].exists()) t.row_multiple = static_cast<int>(j["row_multiple"].integer(1, kMaxRowMultiple));
    check_row_fields(t, origin);
    check_batch_fields(t, origin);
    parse_nodes(j, t, origin);
    if (j["comm_weight"].exists()) t.comm_weight = j["comm_weight"].number(0, kMaxCommWeight);
    if (j["comm_load_tolerance"].exists()) t.comm_load_tolerance = j["comm_load_tolerance"].number(0, 1);
    if (j["expert_invocation_tokens"].exists())
        t.expert_invocation_tokens = j["expert_invocation_tokens"].integer(0, kMaxInvocationTokens);
    parse_edp_shards(j["edp_shards"], t, origin);
    parse_attention_stages(j["attention_stages"], t);
    parse_migration(j["migration"], t);
    return t;
}

std::string topology_to_json(const Topology& t) {
    nlohmann::json j;
    j["ep_ranks"] = t.ep_ranks;
    if (t.experts_per_layer) j["experts_per_layer"] = t.experts_per_layer;
    j["dp_slots"] = t.dp_slots;
    j["edp_shards"] = t.edp_shards;
    if (t.token_cap != 0 || t.batch.samples_per_cell == 0) j["token_cap"] = t.token_cap;
    nlohmann::json st = nlohmann::json::array();
    for (const auto& s : t.attention_stages)
        st.push_back({{"name", s.name}, {"alpha", s.alpha}, {"beta", s.beta}});
    j["attention_stages"] = st;
    if (t.min_rows) j["min_rows"] = t.min_rows;
    if (t.row_multiple != 1) j["row_multiple"] = t.row_multiple;
    if (t.gpus_per_node) j["gpus_per_node"] = t.gpus_per_node;
    if (!t.ep_rank_nodes.empty()) j["ep_rank_nodes"] = t.ep_rank_nodes;
    if (!t.dp_slot_nodes.empty()) j["dp_slot_nodes"] = t.dp_slot_nodes;
    if (t.comm_weight != 0) j["comm_weight"] = t.comm_weight;
    if (t.comm_load_tolerance != 0.02) j["comm_load_tolerance"] = t.comm_load_tolerance;
    if (t.expert_invocation_tokens != 0) j["expert_invocation_tokens"] = t.expert_invocation_tokens;
    if (t.batch.samples_per_dp_slot) j["samples_per_dp_slot"] = t.batch.samples_per_dp_slot;
    if (t.batch.samples_per_cell) j["samples_per_cell"] = t.batch.samples_per_cell;
    if (t.batch.max_samples_per_cell) j["max_samples_per_cell"] = t.batch.max_samples_per_cell;
    if (t.batch.oversize == Oversize::Alone) j["oversize"] = "alone";
    if (t.has_migration) {
        const MigrationModel& m = t.migration;
        nlohmann::json o = {{"state_bytes_per_param", m.state_bytes_per_param},
                            {"intra_node_GBps", m.intra_node_GBps},
                            {"inter_node_GBps", m.inter_node_GBps},
                            {"achieved_TFLOPs", m.achieved_TFLOPs}};
        if (m.expert_parameters) o["expert_parameters"] = m.expert_parameters;
        if (m.seconds_per_U != 0) o["seconds_per_U"] = m.seconds_per_U;
        if (m.plan_seconds != 0) o["plan_seconds"] = m.plan_seconds;
        if (!m.overlap_planning) o["planning"] = "serial";
        j["migration"] = o;
    }
    return j.dump();
}

void check_row_fields(const Topology& t, const std::string& origin) {
    auto range = [&](const char* key, std::int64_t v, std::int64_t lo, std::int64_t hi) {
        if (v < lo)
            throw InputError(origin + ": field '" + key + "' must be >= " + std::to_string(lo) + " (got " +
                             std::to_string(v) + ")");
        if (v > hi)
            throw InputError(origin + ": field '" + key + "' must be at most " + std::to_string(hi) + " (got " +
                             std::to_string(v) + ")");
    };
    range("min_rows", t.min_rows, 0, kMaxMinRows);
    range("row_multiple", t.row_multiple, 1, kMaxRowMultiple);
    const std::int64_t m = t.row_multiple;
    const std::int64_t first = (static_cast<std::int64_t>(t.min_rows) + m - 1) / m * m;
    if (first > kMaxTopologyRows)
        throw InputError(origin + ": min_rows " + std::to_string(t.min_rows) + " rounded up to a multiple of " +
                         "row_multiple " + std::to_string(m) + " is " + std::to_string(first) +
                         " rows, above the largest row count " + std::to_string(kMaxTopologyRows));
}

void check_batch_fields(const Topology& t, const std::string& origin) {
    const BatchRules& b = t.batch;
    auto range = [&](const char* key, std::int64_t v) {
        if (v < 0 || v > kMaxBatchCount)
            throw InputError(origin + ": field '" + key + "' must be in 0.." + std::to_string(kMaxBatchCount) +
                             " (got " + std::to_string(v) + ")");
    };
    range("samples_per_dp_slot", b.samples_per_dp_slot);
    range("samples_per_cell", b.samples_per_cell);
    range("max_samples_per_cell", b.max_samples_per_cell);
    const std::string S = std::to_string(b.samples_per_dp_slot), c = std::to_string(b.samples_per_cell);
    if (t.token_cap == 0 && b.samples_per_cell == 0)
        throw InputError(origin + ": token_cap 0: a token cap is needed unless samples_per_cell is set");
    if (b.samples_per_cell > 0 && b.max_samples_per_cell > 0 && b.samples_per_cell > b.max_samples_per_cell)
        throw InputError(origin + ": samples_per_cell " + c + " exceeds max_samples_per_cell " +
                         std::to_string(b.max_samples_per_cell));
    if (b.samples_per_dp_slot == 0) return;
    const std::int64_t m = t.row_multiple;
    if (b.samples_per_cell > 0) {
        if (b.samples_per_dp_slot % b.samples_per_cell != 0)
            throw InputError(origin + ": samples_per_cell " + c + " does not divide samples_per_dp_slot " + S);
        const std::int64_t R = b.samples_per_dp_slot / b.samples_per_cell;
        const std::string head = origin + ": samples_per_dp_slot " + S + " with samples_per_cell " + c +
                                 " fixes R = " + std::to_string(R) + " rows, ";
        if (R < t.min_rows) throw InputError(head + "below min_rows " + std::to_string(t.min_rows));
        if (R % m != 0) throw InputError(head + "not a multiple of row_multiple " + std::to_string(m));
        return;
    }
    const std::string head =
        origin + ": samples_per_dp_slot " + S + " allows at most " + S + " rows (every cell non-empty)";
    if (t.min_rows > b.samples_per_dp_slot) throw InputError(head + ", below min_rows " + std::to_string(t.min_rows));
    if (m > b.samples_per_dp_slot)
        throw InputError(head + ", and no multiple of row_multiple " + std::to_string(m) + " is among 1.." + S);
}

void check_batch_window(const Topology& t, std::int64_t n, const std::string& origin) {
    const BatchRules& b = t.batch;
    const std::int64_t D = t.dp_slots;
    auto str = [](std::int64_t v) { return std::to_string(v); };
    auto fail = [&](const char* field, const std::string& text) {
        throw InputError(origin.empty() ? text : origin + ": " + field + ": " + text);
    };
    if (b.samples_per_dp_slot > 0 && n != D * b.samples_per_dp_slot)
        fail("samples_per_dp_slot",
             str(n) + " samples cannot fill " + str(D) + " DP slots with " + str(b.samples_per_dp_slot) + " each");
    if (b.samples_per_cell == 0) return;
    const std::int64_t c = b.samples_per_cell;
    if (n % (c * D) != 0)
        fail("samples_per_cell", str(n) + " samples cannot fill cells of " + str(c) + " samples on " + str(D) +
                                     " DP slots: " + str(n) + " is not a multiple of " + str(c) + " x " + str(D) +
                                     " = " + str(c * D));
    const std::int64_t R = n / (c * D);
    const std::string head = "samples_per_cell " + str(c) + " on " + str(D) + " DP slots fixes R = " + str(R) +
                             " rows for " + str(n) + " samples, ";
    if (R < t.min_rows) fail("samples_per_cell", head + "below min_rows " + str(t.min_rows));
    if (R % t.row_multiple != 0)
        fail("samples_per_cell", head + "not a multiple of row_multiple " + str(t.row_multiple));
}

std::int64_t effective_token_cap(const Topology& t, const std::vector<std::int64_t>& length) {
    if (t.token_cap > 0 || t.batch.samples_per_cell <= 0) return t.token_cap;
    std::vector<std::int64_t> sorted(length);
    const std::size_t c = std::min(sorted.size(), static_cast<std::size_t>(t.batch.samples_per_cell));
    std::partial_sort(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(c), sorted.end(), std::greater<>());
    std::int64_t sum = 0;
    for (std::size_t k = 0; k < c; ++k)
        sum += sorted[k];
    return std::max<std::int64_t>(sum, 1);
}

void check_topology_for_model(const Topology& t, const ModelDescription& m, const std::string& origin) {
    if (t.experts_per_layer && t.experts_per_layer != m.experts)
        throw InputError(origin + ": experts_per_layer " + std::to_string(t.experts_per_layer) +
                         " differs from the trace's " + std::to_string(m.experts) + " experts");
    if (m.experts % t.ep_ranks != 0)
        throw InputError(origin + ": " + std::to_string(m.experts) + " experts are not divisible by " +
                         std::to_string(t.ep_ranks) + " EP ranks");
}

std::vector<std::string> known_topology_names() {
    std::vector<std::string> names;
    for (const auto& r : embedded_topologies())
        names.push_back(r.name);
    // The files come in file-name order, where "x-2nodes.json" sorts before "x.json".
    std::sort(names.begin(), names.end());
    return names;
}

namespace {

std::string known_topology_list() {
    std::string list;
    for (const auto& n : known_topology_names())
        list += (list.empty() ? "" : ", ") + n;
    return list;
}

} // namespace

Topology known_topology(const std::string& name) {
    for (const auto& r : embedded_topologies())
        if (r.name == name) return parse_topology(r.text, "resources/topologies/" + r.name + ".json");
    throw InputError("unknown topology '" + util::printable(name) + "' (known: " + known_topology_list() + ")");
}

std::string topology_origin(const std::string& spec) {
    return util::printable(spec, std::numeric_limits<std::size_t>::max());
}

Topology load_topology(const std::string& spec) {
    std::error_code ec;
    const std::filesystem::path p(spec);
    if (!spec.empty() && std::filesystem::exists(p, ec)) {
        return parse_topology(read_input_file(p, input_files::kTopology), topology_origin(spec));
    }
    for (const auto& r : embedded_topologies())
        if (r.name == spec) return parse_topology(r.text, "resources/topologies/" + r.name + ".json");
    throw MissingFileError(util::printable(spec) +
                               ": no such topology file or shipped topology (known: " + known_topology_list() + ")",
                           p);
}

} // namespace routepack
