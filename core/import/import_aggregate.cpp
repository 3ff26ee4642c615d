// Aggregate per-layer expert totals (trace-formats.md §3 "Derived counts JSON", the aggregate/ set):
// {"counts": [num_layers][num_experts] non-negative integers, "num_layers", "num_experts", "src"}.
// Counts may be JSON floats with integral values (232795.0: the SGLang expert-distribution recorder,
// sgl-project/sglang python/sglang/srt/eplb/expert_distribution.py, keeps float tensors and the
// dump script writes them with .tolist()); a non-integral one is refused naming counts[l][e].
// Layer axis = all decoder layers (every layer is MoE in the bundled models). No sequences: the
// trace is load-only (placement views), never packed. Megatron-LM's router trace JSONL is read here
// too (parse_router_trace): it has no request boundaries either.
#include "core/import/import_detail.h"
#include "core/util/json_field.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <numeric>

namespace routepack::detail {

std::vector<int> csv_layer_ids(const SourceFile& f);       // import_csv.cpp
std::vector<int> step_json_layer_ids(const SourceFile& f); // import_step_json.cpp

namespace {

/// The decoder layer of router-trace layer id `id` read with `shift` (0: 0-based, 1: 1-based), or
/// why it is none: "" when it fits the model (>= 0, below num_hidden_layers when known, a MoE layer
/// when the model lists them).
std::string layer_misfit(int id, int shift, const ModelDescription& m) {
    const int layer = id - shift;
    if (layer < 0) return "layer " + std::to_string(id) + " is not a 1-based layer_number";
    if (m.num_hidden_layers > 0 && layer >= m.num_hidden_layers)
        return "layer " + std::to_string(id) + (shift ? " (decoder layer " + std::to_string(layer) + ")" : "") +
               " is not below num_hidden_layers = " + std::to_string(m.num_hidden_layers);
    if (!m.moe_layers.empty() && m.moe_index(layer) < 0)
        return "layer " + std::to_string(id) + (shift ? " (decoder layer " + std::to_string(layer) + ")" : "") +
               " is not a MoE layer of the model (MoE layers " + format_layer_list(m.moe_layers) + ")";
    return {};
}

/// The shift (0 or 1) of the layer ids seen (id -> first line), and the import note that says it.
/// Auto: the base under which every id fits the model (layer_misfit) when only one does; an id 0
/// rules out 1-based, an id reaching num_hidden_layers (or one off the MoE layers) 0-based.
/// InputError naming the line of the first misfit when no base fits (or the given one does not),
/// and asking for the base when both fit.
int router_trace_shift(const std::map<int, std::size_t>& first_line, LayerBase base, const ModelDescription& m,
                       const std::string& file) {
    const char* const kZero = "0-based (the decoder.layers index of Megatron-LM's training hooks)";
    const char* const kOne = "1-based (the layer_number of Megatron-LM's inference record_indices)";
    auto misfit = [&](int shift) -> std::pair<std::string, std::size_t> {
        for (const auto& [id, line] : first_line)
            if (std::string why = layer_misfit(id, shift, m); !why.empty()) return {why, line};
        return {"", 0};
    };
    auto refuse = [&](const std::pair<std::string, std::size_t>& bad) {
        throw InputError(file + ": line " + std::to_string(bad.second) + ": " + bad.first);
    };
    const auto zero = misfit(0), one = misfit(1);
    const std::string head = file + ": router trace layer ids read ";
    if (base != LayerBase::Auto) {
        const bool is_one = base == LayerBase::One;
        if (!(is_one ? one : zero).first.empty()) refuse(is_one ? one : zero);
        add_import_note(head + (is_one ? kOne : kZero) + ", as given");
        return is_one ? 1 : 0;
    }
    if (zero.first.empty() && !one.first.empty()) {
        add_import_note(head + kZero + ": read 1-based, " + one.first);
        return 0;
    }
    if (one.first.empty() && !zero.first.empty()) {
        add_import_note(head + kOne + ": read 0-based, " + zero.first);
        return 1;
    }
    if (!zero.first.empty()) refuse(zero);
    std::vector<int> ids;
    for (const auto& [id, line] : first_line)
        ids.push_back(id);
    throw InputError(file + ": the router trace's layer ids " + format_layer_list(ids) +
                         " fit the model read 0-based (decoder.layers index, Megatron-LM's training hooks) and "
                         "1-based (layer_number, its inference record_indices) alike: give the base (",
                     Setting{"router_layer_base", "0 or 1", "router layer base 0 or 1"}, ")");
}

/// Megatron-LM's router trace (NVIDIA/Megatron-LM d98e8a64 megatron/core/transformer/moe/router_trace.py,
/// --moe-routing-trace-path): router_trace_rank<r>.jsonl, one record per (step, block, layer)
/// {"step", "stage", "block", "layer", "rank", "num_tokens", "topk", "top_indices": [num_tokens][topk]}.
/// No request boundaries, so only totals: a[l][e] = occurrences of e in the decoder records of
/// layer l (MTP records, block "mtp", are skipped). `layer` is a decoder layer id with the base of
/// router_trace_shift (the training hooks' 0-based decoder.layers index, which with pipeline
/// parallelism counts within the rank's stage, or inference's 1-based layer_number); the layers
/// must be MoE layers of the given model, or, without a layer list, the MoE layers are the layers
/// seen. The expert count must be given (the trace does not say it).
AggregateCounts parse_router_trace(const SourceFile& f, const ModelDescription& given, LayerBase base) {
    const std::string file = f.path.string();
    if (given.experts <= 0)
        throw InputError(file + ": a Megatron router trace does not say the expert count: ",
                         Setting{"ask_expert_count", "",
                                 "give the expert count (a shipped model's name, its config.json or the count)"},
                         "");
    const int E = given.experts;
    std::map<int, std::vector<std::uint64_t>> by_id; // layer id as written -> [E]
    std::map<int, std::size_t> first_line;
    std::int64_t steps_lo = INT64_MAX, steps_hi = INT64_MIN;
    int topk_seen = 0;
    for_each_line(text_of(f), [&](std::string_view line, std::size_t offset, std::size_t line_no) {
        const nlohmann::json rec_json =
            parse_json_text(f, line, offset + (f.bytes.size() - text_of(f).size()), line_no);
        const std::string where = file + ": line " + std::to_string(line_no);
        const util::JsonField rec(rec_json, where);
        rec.object();
        if (const util::JsonField block = rec["block"]; block.given()) {
            const nlohmann::json& b = block.json();
            if (!b.is_string() || b.get_ref<const std::string&>() != "decoder") return;
        }
        if (rec["mtp_idx"].given()) return;
        const int layer = static_cast<int>(rec["layer"].integer(0, kMaxLayerId + 1, util::IntegralFloats::Accept));
        if (const util::JsonField step = rec["step"]; step.given()) {
            const std::int64_t s = step.integer(0, kMaxTokens, util::IntegralFloats::Accept);
            steps_lo = std::min(steps_lo, s);
            steps_hi = std::max(steps_hi, s);
        }
        const util::JsonField top = rec["top_indices"];
        const std::size_t tokens = top.list();
        first_line.emplace(layer, line_no);
        auto& row = by_id[layer];
        row.resize(static_cast<std::size_t>(E), 0);
        for (std::size_t t = 0; t < tokens; ++t) {
            // One token's expert ids; the field paths are built only for an error.
            const auto& slots = top.json()[t];
            if (!slots.is_array()) top[t].fail("a list of expert ids");
            if (given.top_k > 0 && static_cast<int>(slots.size()) != given.top_k)
                throw InputError(top[t].where() + " has " + std::to_string(slots.size()) +
                                 " expert ids, the model's top-k is " + std::to_string(given.top_k));
            topk_seen = static_cast<int>(slots.size());
            for (std::size_t s = 0; s < slots.size(); ++s) {
                auto e = util::json_integer_of(slots[s], 0, E - 1, util::IntegralFloats::Accept);
                if (!e) e = top[t][s].integer(0, E - 1, util::IntegralFloats::Accept); // throws, naming the field
                ++row[static_cast<std::size_t>(*e)];
            }
        }
    });
    if (by_id.empty()) throw InputError(file + ": no decoder records in the router trace");
    const int shift = router_trace_shift(first_line, base, given, file);
    ModelDescription m = given;
    if (m.moe_layers.empty())
        for (const auto& [id, _] : by_id)
            m.moe_layers.push_back(id - shift);
    if (m.num_hidden_layers <= 0) m.num_hidden_layers = hidden_layers_for(m.moe_layers, file + ": moe_layers");
    if (m.top_k <= 0) m.top_k = topk_seen;
    if (m.name.empty()) m.name = f.stem();
    if (m.source.empty()) m.source = file;
    m.validate();
    AggregateCounts out;
    out.totals.assign(static_cast<std::size_t>(m.num_moe_layers()) * E, 0);
    for (const auto& [id, row] : by_id)
        std::copy(row.begin(), row.end(),
                  out.totals.begin() + static_cast<std::ptrdiff_t>(m.moe_index(id - shift)) * E);
    out.source = "Megatron router trace " + f.path.filename().string() +
                 (steps_lo <= steps_hi ? ", steps " + std::to_string(steps_lo) + ".." + std::to_string(steps_hi) : "") +
                 ", layer ids " + (shift ? "1-based" : "0-based");
    out.model = m;
    return out;
}

} // namespace

AggregateCounts parse_aggregate(const SourceFile& f, const ModelDescription& given, LayerBase base) {
    const std::string file = f.path.string();
    const std::string_view text = text_of(f);
    if (const std::size_t eol = text.find('\n'); text.substr(0, eol).find("\"top_indices\"") != std::string_view::npos)
        return parse_router_trace(f, given, base);
    const nlohmann::json j = parse_json_text(f, text, f.bytes.size() - text.size(), 0);
    if (!j.is_object()) throw InputError(file + ": expected an object with counts, num_layers, num_experts");
    const util::JsonField doc(j, file);
    // Range checks without wrapping (4294967298 is not 2); integral floats (28.0) are integers. The
    // model bounds follow from validate().
    const auto& c = doc["counts"].json();
    const std::int64_t L = doc["num_layers"].integer(1, kMaxLayerId + 1, util::IntegralFloats::Accept);
    const std::int64_t E = doc["num_experts"].integer(1, std::int64_t(1) << 20, util::IntegralFloats::Accept);
    if (!c.is_array() || static_cast<std::int64_t>(c.size()) != L)
        throw InputError(file + ": counts must be a list of num_layers = " + std::to_string(L) + " lists");
    // Check every row against the real arrays before allocating [L][E] from the declared sizes.
    for (std::int64_t l = 0; l < L; ++l) {
        const auto& row = c[static_cast<std::size_t>(l)];
        if (!row.is_array() || static_cast<std::int64_t>(row.size()) != E)
            throw InputError(file + ": counts[" + std::to_string(l) + "] must hold num_experts = " + std::to_string(E) +
                             " integers");
    }

    AggregateCounts out;
    if (doc["src"].given()) out.source = doc["src"].string();
    out.totals.resize(static_cast<std::size_t>(L * E));
    for (std::int64_t l = 0; l < L; ++l) {
        const auto& row = c[static_cast<std::size_t>(l)];
        std::uint64_t layer_sum = 0;
        for (std::int64_t e = 0; e < E; ++e) {
            const auto& v = row[static_cast<std::size_t>(e)];
            // SGLang's recorder dumps float tensors: 232795.0 is the count 232795; 1.5 is refused.
            auto count = util::json_integer_of(v, 0, INT64_MAX, util::IntegralFloats::Accept);
            if (!count)
                count = util::JsonField(v, file, "counts[" + std::to_string(l) + "][" + std::to_string(e) + "]")
                            .integer(0, INT64_MAX, util::IntegralFloats::Accept); // throws, naming the field
            const auto x = static_cast<std::uint64_t>(*count);
            if (__builtin_add_overflow(layer_sum, x, &layer_sum) || layer_sum > static_cast<std::uint64_t>(INT64_MAX))
                throw InputError(file + ": counts[" + std::to_string(l) + "] adds up to more than " +
                                 std::to_string(INT64_MAX));
            out.totals[static_cast<std::size_t>(l * E + e)] = x;
        }
    }
    ModelDescription m = given;
    if (m.experts > 0 && m.experts != E)
        throw InputError(file + ": num_experts " + std::to_string(E) + " differs from the model's " +
                         std::to_string(m.experts));
    if (!m.moe_layers.empty() && m.num_moe_layers() != L)
        throw InputError(file + ": num_layers " + std::to_string(L) + " differs from the model's " +
                         std::to_string(m.num_moe_layers()) + " MoE layers");
    m.experts = static_cast<int>(E);
    if (m.moe_layers.empty()) {
        m.moe_layers.resize(static_cast<std::size_t>(L));
        std::iota(m.moe_layers.begin(), m.moe_layers.end(), 0);
    }
    if (m.num_hidden_layers <= 0) m.num_hidden_layers = hidden_layers_for(m.moe_layers, file + ": moe_layers");
    if (m.name.empty()) m.name = f.stem();
    if (m.source.empty()) m.source = file;
    if (m.top_k > 0) {
        m.validate(); // bounds (layers x experts) for a described model
    } else {
        ModelDescription probe = m; // top_k unknown: check the rest
        probe.top_k = 1;
        probe.validate();
    }
    // top_k stays 0 (unknown) when no model was given: aggregate totals do not say.
    out.model = m;
    return out;
}

std::vector<int> self_described_moe_layers(const SourceFile& f, TraceFormat format) {
    switch (format) {
    case TraceFormat::PromptCsv:
        return csv_layer_ids(f);
    case TraceFormat::StepJson:
        return step_json_layer_ids(f);
    default:
        return {};
    }
}

} // namespace routepack::detail
