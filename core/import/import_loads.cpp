// The loads file (format "loads"; `routepack place --loads FILE`, `routepack import --format
// loads`): per-layer expert loads as a JSON [L][E] list of lists of non-negative integers (tokens),
// or an object {"loads": [L][E], "moe_layers": [...] (optional), "num_hidden_layers": N
// (optional)} and no other field. Load-only, as the aggregate format: no samples, never packed.
#include "core/import/import_detail.h"

#include "core/util/json_field.h"

#include <nlohmann/json.hpp>

#include <limits>

namespace routepack::detail {

namespace {

/// Largest layer id or count read from a loads file before the model's own check.
constexpr std::int64_t kLoadsIntMax = std::numeric_limits<int>::max();

/// The [L][E] loads of `rows` (row-major). Loads are whole numbers up to 2^64 - 1 (integral floats
/// accepted, as the aggregate format takes them); a layer whose loads sum above 2^64 - 1 is refused
/// (its rank loads would wrap).
std::vector<std::uint64_t> read_loads(const util::JsonField& rows, std::size_t& L, std::size_t& E) {
    const char* shape = "a non-empty [L][E] list of lists";
    L = rows.list(shape);
    if (L == 0) rows.fail(shape);
    E = rows[0].list(shape);
    if (E == 0) rows.fail(shape);
    std::vector<std::uint64_t> loads;
    loads.reserve(L * E);
    for (std::size_t l = 0; l < L; ++l) {
        const util::JsonField row = rows[l];
        if (!row.json().is_array() || row.json().size() != E)
            throw InputError(row.where() + " must be a list of " + std::to_string(E) + " loads (as row 0)");
        std::uint64_t total = 0;
        for (std::size_t e = 0; e < E; ++e) {
            const util::JsonField v = row[e];
            const std::uint64_t x =
                v.unsigned_integer(std::numeric_limits<std::uint64_t>::max(), util::IntegralFloats::Accept);
            if (__builtin_add_overflow(total, x, &total))
                throw InputError(v.where() + ": the layer's loads sum above 2^64 - 1 = 18446744073709551615 here (its "
                                             "rank loads would wrap)");
            loads.push_back(x);
        }
    }
    return loads;
}

} // namespace

AggregateCounts parse_loads(const SourceFile& f, const ModelDescription& given) {
    const std::string file = f.path.string();
    const std::string_view text = text_of(f);
    const nlohmann::json j = util::parse_json_document(text, file);
    const util::JsonField doc(j, file);
    if (!j.is_object() && !j.is_array()) doc.fail("a [L][E] list of lists or an object with loads");
    if (j.is_object()) doc.only({"loads", "moe_layers", "num_hidden_layers"});
    std::size_t L = 0, E = 0;
    AggregateCounts out;
    out.totals = read_loads(j.is_object() ? doc["loads"] : doc, L, E);
    ModelDescription m = given;
    if (m.experts > 0 && static_cast<std::size_t>(m.experts) != E)
        throw InputError(file + ": " + std::to_string(E) + " experts per layer differ from the model's " +
                         std::to_string(m.experts));
    m.experts = static_cast<int>(std::min<std::size_t>(E, kLoadsIntMax));
    if (const util::JsonField ml = doc["moe_layers"]; ml.exists()) {
        m.moe_layers.clear();
        const std::size_t n = ml.list("a list of layer ids");
        for (std::size_t i = 0; i < n; ++i)
            m.moe_layers.push_back(static_cast<int>(ml[i].integer(0, kLoadsIntMax - 1)));
    } else if (m.moe_layers.empty()) {
        for (std::size_t l = 0; l < L; ++l)
            m.moe_layers.push_back(static_cast<int>(l));
    }
    if (m.moe_layers.size() != L)
        throw InputError(file + ": " + std::to_string(L) + " rows of loads but " + std::to_string(m.moe_layers.size()) +
                         " MoE layers named");
    if (m.num_hidden_layers <= 0) m.num_hidden_layers = hidden_layers_for(m.moe_layers, file + ": moe_layers");
    if (const util::JsonField h = doc["num_hidden_layers"]; h.exists())
        m.num_hidden_layers = static_cast<int>(h.integer(1, kLoadsIntMax));
    if (m.source.empty()) m.source = file;
    // top_k stays as given (0: unknown; loads do not say); the rest is checked as a model.
    ModelDescription probe = m;
    if (probe.top_k <= 0) probe.top_k = 1;
    try {
        probe.validate();
    } catch (const InputError& e) {
        throw InputError(file + ": " + e.what());
    }
    out.model = m;
    out.source = "loads file " + f.path.filename().string();
    return out;
}

} // namespace routepack::detail
