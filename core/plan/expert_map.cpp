#include "core/plan/expert_map.h"

#include "core/model/trace.h"
#include "core/plan/plan_file.h"
#include "core/util/errors.h"
#include "core/util/input_file.h"
#include "core/util/json.h"
#include "core/util/json_field.h"
#include "core/util/text.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <limits>
#include <string_view>
#include <vector>

namespace routepack {

ExpertMapFormat parse_expert_map_format(const std::string& name) {
    if (name == "routepack") return ExpertMapFormat::RoutePack;
    if (name == "sglang") return ExpertMapFormat::SGLang;
    if (name == "vllm") return ExpertMapFormat::VLLM;
    throw InputError("unknown expert-map format '" + name + "' (valid: routepack, sglang, vllm)");
}

std::string expert_map_json(const Placement& pi, const ModelDescription& model, ExpertMapFormat format) {
    if (pi.layers != model.num_moe_layers() || pi.experts != model.experts)
        throw std::invalid_argument("expert_map_json: placement shape differs from the model");
    const std::vector<int> p2l = physical_to_logical(pi); // [L][E], validates permutations
    const int E = pi.experts;
    auto row = [&](int l) {
        return std::vector<int>(p2l.begin() + static_cast<std::ptrdiff_t>(l) * E,
                                p2l.begin() + static_cast<std::ptrdiff_t>(l + 1) * E);
    };
    nlohmann::ordered_json j;
    switch (format) {
    case ExpertMapFormat::SGLang: {
        nlohmann::ordered_json rows = nlohmann::ordered_json::array();
        std::vector<int> trivial(static_cast<std::size_t>(E));
        for (int e = 0; e < E; ++e)
            trivial[static_cast<std::size_t>(e)] = e;
        for (int layer = 0; layer < model.num_hidden_layers; ++layer) {
            const int l = model.moe_index(layer);
            rows.push_back(l < 0 ? trivial : row(l));
        }
        j["physical_to_logical_map"] = std::move(rows);
        break;
    }
    case ExpertMapFormat::VLLM: {
        nlohmann::ordered_json rows = nlohmann::ordered_json::array();
        for (int l = 0; l < pi.layers; ++l)
            rows.push_back(row(l));
        j["physical_to_logical_map"] = std::move(rows);
        break;
    }
    case ExpertMapFormat::RoutePack: {
        j["format"] = "routepack-expert-map";
        j["version"] = 1;
        j["layer_axis"] = "moe_layers";
        j["moe_layers"] = model.moe_layers;
        j["num_hidden_layers"] = model.num_hidden_layers;
        j["experts"] = E;
        j["ep_ranks"] = pi.ep_ranks;
        j["slots_per_rank"] = pi.slots_per_rank();
        nlohmann::ordered_json placement = nlohmann::ordered_json::array(), maps = nlohmann::ordered_json::array();
        for (int l = 0; l < pi.layers; ++l) {
            placement.push_back(std::vector<int>(pi.slot.begin() + static_cast<std::ptrdiff_t>(l) * E,
                                                 pi.slot.begin() + static_cast<std::ptrdiff_t>(l + 1) * E));
            maps.push_back(row(l));
        }
        j["placement"] = std::move(placement);
        j["physical_to_logical_map"] = std::move(maps);
        break;
    }
    }
    return j.dump();
}

namespace {

using nlohmann::json;
using util::JsonField;

/// Largest decoder-layer id a map may name (as --layer-map's checkpoint layers).
constexpr std::int64_t kMaxLayerId = 999999999;

/// The shapes an expert map takes, as its errors name them.
constexpr std::string_view kMapShapes = "{\"physical_to_logical_map\": [[...]]} (SGLang / vLLM), {\"moe_layers\": "
                                        "[...], \"placement\": [[...]]} or a routepack export-map file";

/// [rows][cols] of the list `v`: rows of one length n, each entry an integer in 0..n-1. JsonField's
/// errors with the field's path ("m.json: placement[1][2] is -1, not an integer in 0..15"); rows of
/// different lengths, and an id >= n, in their own words after the row's path.
std::vector<std::vector<int>> int_rows(const JsonField& v) {
    constexpr std::string_view kRows = "a non-empty list of rows", kEntries = "a non-empty list of integers";
    if (v.list(kRows) == 0) v.fail(kRows);
    const json& rows = v.json();
    std::vector<std::vector<int>> out;
    out.reserve(rows.size());
    for (std::size_t r = 0; r < rows.size(); ++r) {
        const JsonField row = v[r];
        const std::size_t n = row.list(kEntries);
        if (n == 0) row.fail(kEntries);
        if (n != rows[0].size())
            throw InputError(row.where() + " has " + std::to_string(n) + " entries, " + v[0].path() + " has " +
                             std::to_string(rows[0].size()));
        const json& entries = row.json();
        const auto top = static_cast<std::int64_t>(n) - 1;
        std::vector<int> ints;
        ints.reserve(n);
        for (std::size_t k = 0; k < n; ++k) {
            const json& x = entries[k];
            if (const auto id = util::json_integer_of(x, 0, top, util::IntegralFloats::Refuse)) {
                ints.push_back(static_cast<int>(*id));
                continue;
            }
            const JsonField at = row[k];
            const auto id =
                util::json_integer_of(x, 0, std::numeric_limits<std::int64_t>::max(), util::IntegralFloats::Refuse);
            if (!id) at.fail("an integer in 0.." + std::to_string(top));
            // A row lists each of its n entries' partners 0..n-1 once: a larger id means the row
            // is short (or the id is wrong), not that the entry alone is bad.
            throw InputError(row.where() + " has " + std::to_string(n) + " entries but " + at.path() + " is " +
                             std::to_string(*id) + " (a row of " + std::to_string(n) + " entries holds each of 0.." +
                             std::to_string(top) + " once; is an entry missing?)");
        }
        out.push_back(std::move(ints));
    }
    return out;
}

/// Refuses physical_to_logical_map rows that are no permutation. `logical` experts are those any
/// row names (the largest id + 1): a row that lacks one of them is missing an expert; a row naming
/// all of them in more slots holds replicas (redundant experts), unless the model has more experts
/// that no row names, which the message says too. `field` is the list the rows were read from.
void check_p2l_rows(const std::vector<std::vector<int>>& rows, const JsonField& field) {
    int top = -1;
    for (const auto& row : rows)
        for (int x : row)
            top = std::max(top, x);
    const std::size_t logical = static_cast<std::size_t>(top + 1);
    for (std::size_t r = 0; r < rows.size(); ++r) {
        const std::vector<int>& row = rows[r];
        std::vector<int> first(row.size(), -1);
        std::size_t distinct = 0;
        int rep = -1, rep_a = -1, rep_b = -1;
        for (std::size_t v = 0; v < row.size(); ++v) {
            int& f = first[static_cast<std::size_t>(row[v])];
            if (f < 0) {
                f = static_cast<int>(v);
                ++distinct;
            } else if (rep < 0) {
                rep = row[v];
                rep_a = f;
                rep_b = static_cast<int>(v);
            }
        }
        if (rep < 0) continue;
        const std::string at = field[r].where();
        const std::string twice =
            "expert " + std::to_string(rep) + " is in slots " + std::to_string(rep_a) + " and " + std::to_string(rep_b);
        std::size_t missing = 0;
        while (missing < row.size() && first[missing] >= 0)
            ++missing;
        if (missing < logical)
            throw InputError(at + " is not a permutation of 0.." + std::to_string(row.size() - 1) + ": expert " +
                             std::to_string(missing) + " is missing and " + twice);
        if (row.size() - distinct == 1) // one id absent, one twice: a broken permutation as likely as a replica
            throw InputError(at + " has " + std::to_string(row.size()) + " physical slots for " +
                             std::to_string(distinct) + " logical experts (" + twice + ", and no row names expert " +
                             std::to_string(distinct) + "): either expert " + std::to_string(distinct) +
                             " is missing, or the map has replicas (redundant experts), which cannot rewrite a "
                             "checkpoint that holds each expert once");
        throw InputError(at + " has " + std::to_string(row.size()) + " physical slots for " + std::to_string(distinct) +
                         " logical experts (" + twice +
                         "): a map with replicas (redundant experts) cannot rewrite a checkpoint, which holds each "
                         "expert once");
    }
}

/// The fields an expert map object may hold: routepack export-map's, and those the stacks write
/// beside physical_to_logical_map (SGLang, vLLM, EPLB), which are not read.
constexpr std::string_view kMapFields[] = {"format",
                                           "version",
                                           "layer_axis",
                                           "moe_layers",
                                           "num_hidden_layers",
                                           "experts",
                                           "ep_ranks",
                                           "slots_per_rank",
                                           "placement",
                                           "physical_to_logical_map",
                                           "logical_to_all_physical_map",
                                           "logical_to_all_physical_map_num_valid",
                                           "logical_to_rank_dispatch_physical_map",
                                           "logical_to_physical_map",
                                           "logical_replica_count",
                                           "logical_count",
                                           "expert_count"};

/// Any field not in kMapFields (a typo such as "moe_layer") is refused rather than ignored.
void check_map_fields(const JsonField& doc) {
    for (const auto& item : doc.json().items()) {
        const std::string& key = item.key(); // a plain name: lambdas cannot capture structured bindings in C++20
        if (std::find(std::begin(kMapFields), std::end(kMapFields), key) != std::end(kMapFields)) continue;
        throw InputError(doc.where() + ": unknown field '" + util::printable(key) +
                         "' (an expert map holds moe_layers, placement and/or physical_to_logical_map, and "
                         "routepack export-map's format, version, layer_axis, num_hidden_layers, experts, ep_ranks, "
                         "slots_per_rank)");
    }
}

/// The ascending decoder-layer ids of `rows` rows: JsonField's errors ("m.json: moe_layers is 3, not a
/// list of layer ids", "m.json: moe_layers[1] is -1, not an integer in 0..999999999"), "<where> lists
/// 1 layers for 2 rows", "<where> must be ascending (moe_layers[1] = 1 after 2)".
std::vector<int> layer_ids(const JsonField& ml, std::size_t rows) {
    const std::size_t n = ml.list("a list of layer ids");
    if (n != rows)
        throw InputError(ml.where() + " lists " + std::to_string(n) + " layers for " + std::to_string(rows) + " rows");
    const json& ids = ml.json();
    std::vector<int> out;
    out.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
        const auto read = util::json_integer_of(ids[i], 0, kMaxLayerId, util::IntegralFloats::Refuse);
        const std::int64_t id = read ? *read : ml[i].integer(0, kMaxLayerId); // the latter throws
        if (!out.empty() && id <= out.back())
            throw InputError(ml.where() + " must be ascending (" + ml[i].path() + " = " + std::to_string(id) +
                             " after " + std::to_string(out.back()) + ")");
        out.push_back(static_cast<int>(id));
    }
    return out;
}

/// format, version and layer_axis of a routepack export-map file.
void check_routepack_header(const JsonField& doc) {
    const JsonField format = doc["format"];
    if (format.string() != "routepack-expert-map") format.fail("\"routepack-expert-map\"");
    // Read as a JSON number: 1.0 is version 1.
    const JsonField version = doc["version"];
    if (version.integer(std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::max(),
                        util::IntegralFloats::Accept) != 1)
        version.fail("1 (the only routepack-expert-map version)");
    if (const JsonField axis = doc["layer_axis"]; axis.exists() && axis.string() != "moe_layers")
        axis.fail("\"moe_layers\"");
}

/// A {moe_layers, placement} map or a routepack export-map file into m.
void read_placement_map(const JsonField& doc, ExpertMapFile& m) {
    const bool ours = doc["format"].exists();
    if (ours) check_routepack_header(doc);
    m.kind = ours ? "routepack export-map" : "{moe_layers, placement}";
    const JsonField placement_field = doc["placement"];
    const auto placement = int_rows(placement_field);
    m.moe_layers = layer_ids(doc["moe_layers"], placement.size());
    const std::size_t E = placement[0].size();
    for (std::size_t l = 0; l < placement.size(); ++l) {
        std::vector<int> row(E, -1);
        for (std::size_t e = 0; e < E; ++e) {
            int& at = row[static_cast<std::size_t>(placement[l][e])];
            if (at >= 0)
                throw InputError(placement_field[l].where() + " puts experts " + std::to_string(at) + " and " +
                                 std::to_string(e) + " in slot " + std::to_string(placement[l][e]) +
                                 " (each logical expert needs its own slot)");
            at = static_cast<int>(e);
        }
        m.p2l.push_back(std::move(row));
    }
    if (const JsonField p2l_field = doc["physical_to_logical_map"]; p2l_field.exists()) {
        // Both shapes given: they must say the same, whoever wrote the file.
        const auto p2l = int_rows(p2l_field);
        if (p2l.size() != m.p2l.size())
            throw InputError(p2l_field.where() + " has " + std::to_string(p2l.size()) + " rows, " +
                             placement_field.path() + " " + std::to_string(m.p2l.size()));
        for (std::size_t l = 0; l < m.p2l.size(); ++l)
            if (p2l[l] != m.p2l[l])
                throw InputError(p2l_field[l].where() + " is not the inverse of " + placement_field[l].path());
    }
    if (!ours) return;
    // Read as a JSON number: 16.0 is 16 experts.
    if (const JsonField experts = doc["experts"]; experts.exists()) {
        const std::int64_t x = experts.integer(std::numeric_limits<std::int64_t>::min(),
                                               std::numeric_limits<std::int64_t>::max(), util::IntegralFloats::Accept);
        if (x != static_cast<std::int64_t>(E))
            throw InputError(experts.where() + " " + util::json_value_text(experts.json()) + " differs from the " +
                             std::to_string(E) + " entries of each placement row");
    }
    if (const JsonField ranks = doc["ep_ranks"]; ranks.exists()) {
        const std::int64_t p = ranks.integer(1, static_cast<std::int64_t>(E));
        if (E % static_cast<std::size_t>(p) != 0)
            throw InputError(ranks.where() + " " + std::to_string(p) + " must divide the " + std::to_string(E) +
                             " experts");
        m.ep_ranks = static_cast<int>(p);
        m.ep_ranks_given = true;
    }
}

} // namespace

ExpertMapFile parse_expert_map_text(const std::string& text, const std::string& origin) {
    json j;
    try {
        j = util::parse_json_strict(text, origin);
    } catch (const json::parse_error& e) {
        throw InputError(origin + ": malformed JSON at byte " + std::to_string(e.byte) + ": " +
                         util::json_error_description(e));
    } catch (const json::exception& e) {
        throw InputError(origin + ": malformed JSON: " + util::json_error_description(e));
    }
    const JsonField doc(j, origin);
    ExpertMapFile m;
    if (j.is_array()) {
        // The list alone: SGLang's / vLLM's physical_to_logical_map, named as that field.
        const JsonField rows(j, origin, "physical_to_logical_map");
        m.kind = "physical_to_logical_map";
        m.p2l = int_rows(rows);
        check_p2l_rows(m.p2l, rows);
        return m;
    }
    doc.object("an expert map: " + std::string(kMapShapes));
    check_map_fields(doc);
    if (doc["placement"].exists()) {
        read_placement_map(doc, m);
    } else if (const JsonField rows = doc["physical_to_logical_map"]; rows.exists()) {
        m.kind = "physical_to_logical_map";
        m.p2l = int_rows(rows);
        check_p2l_rows(m.p2l, rows);
        if (doc["moe_layers"].exists()) m.moe_layers = layer_ids(doc["moe_layers"], m.p2l.size());
    } else {
        throw InputError(doc.where() + ": not an expert map (no 'physical_to_logical_map' or 'placement'); expected " +
                         std::string(kMapShapes));
    }
    if (const JsonField h = doc["num_hidden_layers"]; h.exists()) {
        const std::int64_t n = h.integer(1, kMaxLayerId + 1);
        if (!m.moe_layers.empty() && n <= m.moe_layers.back())
            throw InputError(h.where() + " " + std::to_string(n) + " must be a layer count above every MoE layer id");
        m.num_hidden_layers = static_cast<int>(n);
    }
    return m;
}

ExpertMapFile read_expert_map_file(const std::string& path) {
    return parse_expert_map_text(read_input_file(path, input_files::kExpertMap), path);
}

namespace {

std::string str(std::int64_t v) {
    return std::to_string(v);
}

/// The experts, layers and EP ranks a placement brings, each against the window's.
void check_layers(const std::vector<int>& have, const ModelDescription& model, const std::string& origin,
                  const std::string& who, const std::string& against) {
    if (have != model.moe_layers)
        throw InputError(origin + ": " + who + " has MoE layers " + format_layer_list(have) + ", " + against + " " +
                         format_layer_list(model.moe_layers));
}

void check_experts(int have, const ModelDescription& model, const std::string& origin, const std::string& who,
                   const std::string& against) {
    if (have != model.experts)
        throw InputError(origin + ": " + who + " has " + str(have) + " experts per layer, " + against + " " +
                         str(model.experts));
}

void check_ranks(int have, int ep_ranks, const std::string& origin, const std::string& who) {
    if (have != ep_ranks)
        throw InputError(origin + ": " + who + " is on " + str(have) + " EP ranks, the topology has " + str(ep_ranks));
}

} // namespace

Placement placement_from_map(const ExpertMapFile& map, const ModelDescription& model, int ep_ranks,
                             const std::string& origin, const std::string& against) {
    const int L = model.num_moe_layers();
    const auto R = static_cast<std::int64_t>(map.p2l.size());
    if (R == 0) throw InputError(origin + ": the map has no rows");
    const int E = static_cast<int>(map.p2l.front().size());
    std::vector<int> row_of(static_cast<std::size_t>(L), -1); // map row of each MoE layer index
    if (!map.moe_layers.empty()) {
        check_layers(map.moe_layers, model, origin, "the map", against);
        for (int l = 0; l < L; ++l)
            row_of[static_cast<std::size_t>(l)] = l;
    } else if (R == L) {
        for (int l = 0; l < L; ++l)
            row_of[static_cast<std::size_t>(l)] = l;
    } else if (R == model.num_hidden_layers) {
        for (int l = 0; l < L; ++l)
            row_of[static_cast<std::size_t>(l)] = model.moe_layers[static_cast<std::size_t>(l)];
        for (int layer = 0; layer < R; ++layer) {
            if (model.moe_index(layer) >= 0) continue;
            const std::vector<int>& row = map.p2l[static_cast<std::size_t>(layer)];
            for (int v = 0; v < static_cast<int>(row.size()); ++v)
                if (row[static_cast<std::size_t>(v)] != v)
                    throw InputError(
                        origin + ": physical_to_logical_map[" + str(layer) + "] is decoder layer " + str(layer) +
                        ", a dense layer of " + against + ": its row must be the identity 0.." +
                        str(static_cast<std::int64_t>(row.size()) - 1) + " (SGLang's trivial row), but slot " + str(v) +
                        " holds expert " + str(row[static_cast<std::size_t>(v)]));
        }
    } else {
        throw InputError(origin + ": the map has " + str(R) + " rows; " + against + " has " + str(L) +
                         " MoE layers (vLLM: one row each) and " + str(model.num_hidden_layers) +
                         " decoder layers (SGLang: one row each)");
    }
    check_experts(E, model, origin, "the map", against);
    if (ep_ranks > 0 && map.ep_ranks_given) check_ranks(map.ep_ranks, ep_ranks, origin, "the map");
    Placement pi;
    pi.layers = L;
    pi.experts = E;
    pi.ep_ranks = ep_ranks > 0 ? ep_ranks : 1;
    pi.slot.assign(static_cast<std::size_t>(L) * static_cast<std::size_t>(E), 0);
    for (int l = 0; l < L; ++l) {
        const auto& row = map.p2l[static_cast<std::size_t>(row_of[static_cast<std::size_t>(l)])];
        for (int v = 0; v < E; ++v)
            pi.slot[static_cast<std::size_t>(l) * static_cast<std::size_t>(E) +
                    static_cast<std::size_t>(row[static_cast<std::size_t>(v)])] = v;
    }
    return pi;
}

Placement placement_from_plan(const PlanFile& plan, const ModelDescription& model, int ep_ranks,
                              const std::string& origin) {
    check_layers(plan.model.moe_layers, model, origin, "the plan", "the window");
    check_experts(plan.placement.experts, model, origin, "the plan", "the window");
    check_ranks(plan.topology.ep_ranks, ep_ranks, origin, "the plan");
    Placement pi = plan.placement;
    pi.ep_ranks = ep_ranks;
    return pi;
}

Placement previous_placement_from_text(const std::string& text, const std::string& origin,
                                       const ModelDescription& model, int ep_ranks) {
    return previous_step_from_text(text, origin, model, ep_ranks).placement;
}

PreviousStep previous_step_from_text(const std::string& text, const std::string& origin, const ModelDescription& model,
                                     int ep_ranks) {
    // One scan without building the document: its format, and the first field neither a plan nor a
    // map holds (the scan stops there, so a pad of any size is never read).
    static const std::vector<std::string_view> known = [] {
        std::vector<std::string_view> k(plan_file_fields().begin(), plan_file_fields().end());
        k.insert(k.end(), std::begin(kMapFields), std::end(kMapFields));
        return k;
    }();
    const util::JsonTopLevel top = util::json_top_level(text, {}, known);
    const auto format = top.strings.find("format");
    const bool is_plan = top.object && format != top.strings.end() && format->second == "routepack-plan";
    if (top.unknown && !is_plan)
        throw InputError(origin + ": unknown field '" + util::printable(*top.unknown) +
                         "' (neither a plan nor an expert map holds it)");
    if (!is_plan)
        return {placement_from_map(parse_expert_map_text(text, origin), model, ep_ranks, origin, "the window"), {}};
    try {
        PlanFile plan = parse_plan(text, origin);
        Placement pi = placement_from_plan(plan, model, ep_ranks, origin);
        return {std::move(pi), std::move(plan.history)};
    } catch (const nlohmann::json::exception& e) {
        throw InputError(origin + ": " + util::json_error_description(e));
    }
}

Placement read_previous_placement(const std::filesystem::path& path, const ModelDescription& model, int ep_ranks) {
    return read_previous_step(path, model, ep_ranks).placement;
}

PreviousStep read_previous_step(const std::filesystem::path& path, const ModelDescription& model, int ep_ranks) {
    return previous_step_from_text(read_input_file(path, input_files::kPreviousPlacement),
                                   util::printable(path.string()), model, ep_ranks);
}
} // namespace routepack
