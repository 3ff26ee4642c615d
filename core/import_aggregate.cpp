// Aggregate per-layer expert totals (trace-formats.md §3 "Derived counts JSON", the aggregate/ set):
// {"counts": [num_layers][num_experts] non-negative integers, "num_layers", "num_experts", "src"}.
// Layer axis = all decoder layers (every layer is MoE in the bundled models). No sequences: the
// trace is load-only (placement views), never packed.
#include "core/import_detail.h"

#include <nlohmann/json.hpp>

#include <numeric>

namespace routepack::detail {

std::vector<int> csv_layer_ids(const SourceFile& f);        // import_csv.cpp
std::vector<int> step_json_layer_ids(const SourceFile& f);  // import_step_json.cpp

AggregateCounts parse_aggregate(const SourceFile& f, const ModelDescription& given) {
    const std::string file = f.path.string();
    const nlohmann::json j = parse_json_text(f, f.bytes, 0, 0);
    if (!j.is_object()) throw InputError(file + ": expected an object with counts, num_layers, num_experts");
    for (const char* k : {"counts", "num_layers", "num_experts"})
        if (!j.contains(k)) throw InputError(file + ": missing field '" + k + "'");
    if (!j["num_layers"].is_number_integer() || !j["num_experts"].is_number_integer())
        throw InputError(file + ": num_layers and num_experts must be integers");
    const int L = j["num_layers"].get<int>();
    const int E = j["num_experts"].get<int>();
    if (L < 1 || E < 1) throw InputError(file + ": num_layers and num_experts must be >= 1");
    const auto& c = j["counts"];
    if (!c.is_array() || static_cast<int>(c.size()) != L)
        throw InputError(file + ": counts must be a list of num_layers = " + std::to_string(L) + " lists");

    AggregateCounts out;
    out.source = j.value("src", std::string());
    out.totals.resize(static_cast<std::size_t>(L) * E);
    for (int l = 0; l < L; ++l) {
        const auto& row = c[static_cast<std::size_t>(l)];
        if (!row.is_array() || static_cast<int>(row.size()) != E)
            throw InputError(file + ": counts[" + std::to_string(l) + "] must hold num_experts = " + std::to_string(E) +
                             " integers");
        for (int e = 0; e < E; ++e) {
            const auto& v = row[static_cast<std::size_t>(e)];
            if (!v.is_number_integer() || v.get<std::int64_t>() < 0)
                throw InputError(file + ": counts[" + std::to_string(l) + "][" + std::to_string(e) +
                                 "] is not a non-negative integer");
            out.totals[static_cast<std::size_t>(l) * E + e] = v.get<std::uint64_t>();
        }
    }
    ModelDescription m = given;
    if (m.experts > 0 && m.experts != E)
        throw InputError(file + ": num_experts " + std::to_string(E) + " differs from the model's " +
                         std::to_string(m.experts));
    if (!m.moe_layers.empty() && m.num_moe_layers() != L)
        throw InputError(file + ": num_layers " + std::to_string(L) + " differs from the model's " +
                         std::to_string(m.num_moe_layers()) + " MoE layers");
    m.experts = E;
    if (m.moe_layers.empty()) {
        m.moe_layers.resize(static_cast<std::size_t>(L));
        std::iota(m.moe_layers.begin(), m.moe_layers.end(), 0);
    }
    if (m.num_hidden_layers <= 0) m.num_hidden_layers = m.moe_layers.back() + 1;
    if (m.name.empty()) m.name = f.stem();
    if (m.source.empty()) m.source = file;
    // top_k stays 0 (unknown) when no model was given: aggregate totals do not say.
    out.model = m;
    return out;
}

std::vector<int> self_described_moe_layers(const SourceFile& f, TraceFormat format) {
    switch (format) {
    case TraceFormat::PromptCsv: return csv_layer_ids(f);
    case TraceFormat::StepJson: return step_json_layer_ids(f);
    default: return {};
    }
}

}  // namespace routepack::detail
