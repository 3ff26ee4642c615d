#include "core/import/import_detail.h"

#include <algorithm>

namespace routepack::detail {

std::vector<int> resolve_layer_axis(int axis_layers, const ModelDescription& model, const std::string& where) {
    std::vector<int> ids;
    if (axis_layers == model.num_hidden_layers) {
        ids.resize(static_cast<std::size_t>(axis_layers));
        for (int j = 0; j < axis_layers; ++j)
            ids[j] = j;
    } else if (axis_layers == model.num_moe_layers()) {
        ids = model.moe_layers;
    } else {
        throw InputError(where + ": layer axis has " + std::to_string(axis_layers) +
                         " entries, matching neither the model's " + std::to_string(model.num_hidden_layers) +
                         " decoder layers nor its " + std::to_string(model.num_moe_layers()) + " MoE layers");
    }
    return ids;
}

SampleRecord make_sample_record(const RouteArray& routes, const ModelDescription& model, const SampleMeta& meta) {
    const std::string where = meta.source_file + ": sample " + meta.id;
    const int E = model.experts;
    const int L = model.num_moe_layers();
    const int K = routes.top_k;
    if (K != model.top_k)
        throw InputError(where + ": routes have top-k " + std::to_string(K) + ", model says " +
                         std::to_string(model.top_k));
    if (routes.rows < 1) throw InputError(where + ": no routed rows");
    if (static_cast<int>(routes.axis_layer_ids.size()) != routes.axis_layers ||
        routes.ids.size() != static_cast<std::size_t>(routes.rows) * routes.axis_layers * K)
        throw std::logic_error(where + ": inconsistent RouteArray");

    SampleRecord rec;
    rec.counts.assign(static_cast<std::size_t>(L) * E, 0u);
    // The per-token routes at the MoE layers, [L][rows][K] (missing routes stay all-ones).
    rec.routes = SampleRoutes::make(routes.rows, L, K, E);
    // axis position -> MoE index (or -1 for dense layers, which are skipped).
    std::vector<int> axis_to_moe(static_cast<std::size_t>(routes.axis_layers));
    for (int j = 0; j < routes.axis_layers; ++j)
        axis_to_moe[j] = model.moe_index(routes.axis_layer_ids[j]);
    std::vector<std::int64_t> missing_per_layer(static_cast<std::size_t>(L), 0);
    std::int64_t missing = 0;
    const std::int32_t* p = routes.ids.data();
    for (std::int64_t r = 0; r < routes.rows; ++r) {
        for (int j = 0; j < routes.axis_layers; ++j, p += K) {
            const int l = axis_to_moe[j];
            if (l < 0) continue;
            std::uint32_t* row = rec.counts.data() + static_cast<std::size_t>(l) * E;
            for (int s = 0; s < K; ++s) {
                const std::int32_t e = p[s];
                if (e == -1) {
                    ++missing_per_layer[l];
                    ++missing;
                    continue;
                }
                if (e < 0)
                    throw InputError(where + ": row " + std::to_string(r) + ", layer " +
                                     std::to_string(routes.axis_layer_ids[j]) + ": negative expert id " +
                                     std::to_string(e) + " (only -1 marks a missing route)");
                if (e >= E)
                    throw InputError(where + ": row " + std::to_string(r) + ", layer " +
                                     std::to_string(routes.axis_layer_ids[j]) + ": expert id " + std::to_string(e) +
                                     " out of range 0.." + std::to_string(E - 1));
                for (int s2 = 0; s2 < s; ++s2)
                    if (p[s2] == e)
                        throw InputError(where + ": row " + std::to_string(r) + ", layer " +
                                         std::to_string(routes.axis_layer_ids[j]) + ": expert " + std::to_string(e) +
                                         " listed twice, so counts cannot add up to rows x top-k");
                ++row[e];
                rec.routes.set(l, r, s, e);
            }
        }
    }
    // A sample none of whose MoE-layer routes is recorded has no routing at all (a replay that failed
    // for it): refused, as the NeMo-RL reader refuses a sample with only its default row, rather than
    // imported as a sample that sends no token to any expert.
    if (missing > 0 && std::all_of(rec.counts.begin(), rec.counts.end(), [](std::uint32_t v) { return v == 0; }))
        throw InputError(where + ": every route is missing (-1 in all " + std::to_string(routes.rows) + " rows x top-" +
                         std::to_string(K) + " slots at every MoE layer): the sample has no routing to count");
    // Every MoE layer of the model must be present on the axis.
    std::vector<char> seen(static_cast<std::size_t>(L), 0);
    for (int l : axis_to_moe)
        if (l >= 0) seen[l] = 1;
    for (int l = 0; l < L; ++l)
        if (!seen[l])
            throw InputError(where + ": MoE layer " + std::to_string(model.moe_layers[l]) +
                             " is absent from the routes");
    // Conservation: per layer sum_e a[l][e] == rows * top_k - missing (holds by construction unless a
    // parser is wrong; kept as the contract every importer is held to).
    for (int l = 0; l < L; ++l) {
        std::uint64_t sum = 0;
        for (int e = 0; e < E; ++e)
            sum += rec.counts[static_cast<std::size_t>(l) * E + e];
        const std::int64_t expect = routes.rows * K - missing_per_layer[l];
        if (static_cast<std::int64_t>(sum) != expect)
            throw InputError(where + ": layer " + std::to_string(model.moe_layers[l]) + ": counts add up to " +
                             std::to_string(sum) + ", expected rows x top-k - missing = " + std::to_string(expect));
    }

    SampleInfo& info = rec.info;
    info.id = meta.id;
    info.source_file = meta.source_file;
    info.request_id = meta.request_id;
    info.group = meta.group;
    info.prompt_len = meta.prompt_len;
    info.routed_rows = routes.rows;
    info.missing_routes = missing;
    if (meta.explicit_length) {
        info.length = *meta.explicit_length;
        info.length_rule = LengthRule::ExplicitTokens;
        if (info.length < routes.rows)
            throw InputError(where + ": token count " + std::to_string(info.length) + " is smaller than its " +
                             std::to_string(routes.rows) + " routed rows");
    } else {
        // rows <= ids.size() (checked above) and 0 <= start_offset <= kMaxTokens: no overflow.
        if (meta.start_offset < 0 || meta.start_offset > kMaxTokens)
            throw std::logic_error(where + ": start offset out of range");
        const std::int64_t extra = meta.rows_rule == LengthRule::Rows ? 0 : 1;
        info.length = routes.rows + extra + meta.start_offset;
        info.length_rule = meta.rows_rule == LengthRule::Rows ? LengthRule::Rows : LengthRule::RowsPlusOne;
    }
    if (info.length > kMaxTokens)
        throw InputError(where + ": sample length t_i = " + std::to_string(info.length) + " tokens is more than " +
                         std::to_string(kMaxTokens));
    if (info.prompt_len && (*info.prompt_len < 0 || *info.prompt_len > info.length))
        throw InputError(where + ": prompt length " + std::to_string(*info.prompt_len) +
                         (*info.prompt_len < 0 ? std::string(" is negative")
                                               : " exceeds the sample length t_i = " + std::to_string(info.length)));
    return rec;
}

} // namespace routepack::detail
