#include "core/plan/measured.h"

#include "core/util/errors.h"
#include "core/util/json_field.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <limits>
#include <set>
#include <stdexcept>
#include <tuple>

namespace routepack {

namespace {

using util::JsonField;

/// Largest count a measured file may state (2^62), as routepack.torch.measure checks it.
constexpr std::int64_t kBig = std::int64_t{1} << 62;
constexpr double kMaxSeconds = std::numeric_limits<double>::max();

/// A double as Python's repr writes it (the shortest text that reads back the same), for messages
/// that quote the measuring code's numbers.
std::string repr(double v) {
    return nlohmann::json(v).dump();
}

/// The "window" object; checks the fingerprint against `want` when it is not empty.
void read_window(const JsonField& w, MeasuredStep& m, const std::string& want) {
    m.trace = w["trace"].string();
    m.window = w["window"].string();
    m.fingerprint = w["fingerprint"].string();
    if (!want.empty() && m.fingerprint != want)
        throw InputError(w["fingerprint"].where() + " is " + m.fingerprint + ", the window's is " + want +
                         ": a measurement of another window");
    m.samples = w["samples"].integer(1, kBig);
    m.experts = w["experts"].integer(1, kBig);
    const std::size_t nl = w["moe_layers"].list();
    for (std::size_t k = 0; k < nl; ++k) {
        const auto l = w["moe_layers"][k].integer(0, std::numeric_limits<int>::max());
        if (!m.moe_layers.empty() && l <= m.moe_layers.back())
            throw InputError(w["moe_layers"].where() + " must be ascending distinct MoE layer ids >= 0");
        m.moe_layers.push_back(static_cast<int>(l));
    }
    if (m.moe_layers.empty())
        throw InputError(w["moe_layers"].where() + " must be ascending distinct MoE layer ids >= 0");
}

/// One piece; its identity (kind, row, slot or shard/layer/rank) goes into `seen`.
MeasuredPiece read_piece(const JsonField& pc, const MeasuredStep& m, int rows,
                         std::set<std::tuple<int, int, int, int, int>>& seen) {
    const Topology& t = m.topology;
    MeasuredPiece x;
    const std::string& kind = pc["kind"].string();
    x.row = static_cast<int>(pc["row"].integer(0, rows - 1));
    std::tuple<int, int, int, int, int> ident;
    if (kind == "attention") {
        x.attention = true;
        x.dp_slot = static_cast<int>(pc["dp_slot"].integer(0, t.dp_slots - 1));
        x.edp_shard = t.shard_of_slot()[static_cast<std::size_t>(x.dp_slot)];
        x.samples = pc["samples"].integer(0, m.samples);
        x.sq_tokens = pc["sq_tokens"].integer(0, kBig);
        ident = {0, x.row, x.dp_slot, 0, 0};
    } else if (kind == "experts") {
        x.moe_layer = static_cast<int>(pc["moe_layer"].integer(0, std::numeric_limits<int>::max()));
        if (!std::binary_search(m.moe_layers.begin(), m.moe_layers.end(), x.moe_layer))
            throw InputError(pc["moe_layer"].where() + " is " + std::to_string(x.moe_layer) +
                             ", not one of the window's MoE layers");
        x.edp_shard = static_cast<int>(pc["edp_shard"].integer(0, t.shards() - 1));
        x.ep_rank = static_cast<int>(pc["ep_rank"].integer(0, t.ep_ranks - 1));
        x.experts = pc["experts"].integer(0, m.experts);
        ident = {1, x.row, x.edp_shard, x.moe_layer, x.ep_rank};
    } else {
        throw InputError(pc["kind"].where() + " is " + nlohmann::json(kind).dump() +
                         ", not \"attention\" or \"experts\"");
    }
    x.tokens = pc["tokens"].integer(0, kBig);
    x.modelled = pc["modelled"].number(0, kMaxSeconds);
    x.seconds = pc["seconds"].number(0, kMaxSeconds);
    if (!seen.insert(ident).second)
        throw InputError(pc.where() + " repeats the " + kind + " piece of row " + std::to_string(x.row));
    return x;
}

/// Every piece a plan of R rows must hold, present (InputError naming the first missing one).
void check_complete(const JsonField& plan, const MeasuredStep& m, int rows,
                    const std::set<std::tuple<int, int, int, int, int>>& seen) {
    const Topology& t = m.topology;
    for (int r = 0; r < rows; ++r) {
        for (int d = 0; d < t.dp_slots; ++d)
            if (!seen.count({0, r, d, 0, 0}))
                throw InputError(plan.where() + " has no attention piece for row " + std::to_string(r) + ", DP slot " +
                                 std::to_string(d));
        for (int g = 0; g < t.shards(); ++g)
            for (int l : m.moe_layers)
                for (int p = 0; p < t.ep_ranks; ++p)
                    if (!seen.count({1, r, g, l, p}))
                        throw InputError(plan.where() + " has no experts piece for row " + std::to_string(r) +
                                         ", EDP shard " + std::to_string(g) + ", MoE layer " + std::to_string(l) +
                                         ", EP rank " + std::to_string(p));
    }
}

MeasuredPlan read_plan(const JsonField& plan, const MeasuredStep& m) {
    MeasuredPlan out;
    out.name = plan["name"].string();
    out.layout_digest = plan["layout_digest"].string();
    out.rows = static_cast<int>(plan["rows"].integer(1, std::numeric_limits<int>::max()));
    if (plan["modelled_max_u"].given()) out.modelled_max_u = plan["modelled_max_u"].number(0, kMaxSeconds);
    const JsonField pieces = plan["pieces"];
    const std::size_t np = pieces.list();
    std::set<std::tuple<int, int, int, int, int>> seen;
    out.pieces.reserve(np);
    for (std::size_t j = 0; j < np; ++j)
        out.pieces.push_back(read_piece(pieces[j], m, out.rows, seen));
    check_complete(plan, m, out.rows, seen);
    const JsonField step = plan["measured"]["step_seconds"];
    out.step_seconds = step.number(0, kMaxSeconds);
    const double want = compose_measured(out, m.topology, m.moe_layers);
    if (out.step_seconds != want)
        throw InputError(step.where() + " is " + repr(out.step_seconds) + "; its pieces compose to " + repr(want));
    return out;
}

/// The step's synchronization, kept whole: J [R][G], U [G] and the step.
struct Composition {
    std::vector<double> row_shard; ///< [R][G]
    std::vector<double> shard;     ///< [G]
    double step = 0;
};

Composition compose_parts(const MeasuredPlan& plan, const Topology& topology, const std::vector<int>& moe_layers) {
    const int R = plan.rows, G = topology.shards();
    const std::size_t L = moe_layers.size();
    std::vector<double> attention(static_cast<std::size_t>(R) * G, 0.0);
    std::vector<double> experts(static_cast<std::size_t>(R) * G * L, 0.0);
    for (const MeasuredPiece& pc : plan.pieces) {
        const std::size_t rg = static_cast<std::size_t>(pc.row) * G + static_cast<std::size_t>(pc.edp_shard);
        if (pc.attention) {
            attention[rg] = std::max(attention[rg], pc.seconds);
        } else {
            const auto k = static_cast<std::size_t>(
                std::lower_bound(moe_layers.begin(), moe_layers.end(), pc.moe_layer) - moe_layers.begin());
            double& e = experts[rg * L + k];
            e = std::max(e, pc.seconds);
        }
    }
    Composition c;
    c.row_shard.resize(static_cast<std::size_t>(R) * G);
    for (std::size_t rg = 0; rg < c.row_shard.size(); ++rg) {
        double j = attention[rg];
        for (std::size_t k = 0; k < L; ++k)
            j += experts[rg * L + k];
        c.row_shard[rg] = j;
    }
    for (int g = 0; g < G; ++g) {
        double u = 0.0;
        for (int r = 0; r < R; ++r)
            u += c.row_shard[static_cast<std::size_t>(r) * G + static_cast<std::size_t>(g)];
        c.shard.push_back(u);
        c.step = g == 0 ? u : std::max(c.step, u);
    }
    return c;
}

} // namespace

double compose_measured(const MeasuredPlan& plan, const Topology& topology, const std::vector<int>& moe_layers) {
    return compose_parts(plan, topology, moe_layers).step;
}

MeasuredStep parse_measured(const std::string& text, const std::string& origin, const std::string& fingerprint) {
    const nlohmann::json doc = util::parse_json_document(text, origin);
    if (!doc.is_object()) throw InputError(origin + ": the file must be a JSON object");
    const JsonField j(doc, origin);
    const std::string& format = j["format"].string();
    if (format != "routepack-measured")
        throw InputError(j["format"].where() + " is " + nlohmann::json(format).dump() + ", not \"routepack-measured\"");
    (void)j["version"].integer(1, 1);
    MeasuredStep m;
    read_window(j["window"], m, fingerprint);
    try {
        util::check_json_depth(j["topology"].json(), j["topology"].where());
        m.topology = parse_topology(j["topology"].json().dump(), "topology");
    } catch (const InputError& e) {
        throw InputError(j["topology"].where() + " is not a valid topology (" + e.what() + ")");
    }
    const JsonField shapes = j["shapes"];
    if (!shapes.exists() || shapes.given()) {
        for (const char* key : {"hidden", "ffn", "heads", "head_dim", "run_hidden", "run_ffn", "run_head_dim"})
            (void)shapes[key].integer(1, kBig);
        (void)shapes["width"].number(0, 1, true);
    }
    m.shapes = shapes.given() ? shapes.json().dump() : "null";
    (void)j["timing"]["repeats"].integer(1, kBig);
    m.timing = j["timing"].json().dump();
    const JsonField plans = j["plans"];
    const std::size_t np = plans.list();
    if (np == 0) throw InputError(plans.where() + " is empty");
    for (std::size_t k = 0; k < np; ++k)
        m.plans.push_back(read_plan(plans[k], m));
    return m;
}

MeasuredPlan layout_pieces(const Trace& window, const Layout& layout, const Placement& placement,
                           const Topology& topology, const std::string& name) {
    const int L = window.model.num_moe_layers(), E = window.model.experts, P = topology.ep_ranks;
    const int D = topology.dp_slots, R = layout.rows;
    if (layout.dp_slots != D || placement.layers != L || placement.experts != E || placement.ep_ranks != P ||
        topology.token_cap <= 0)
        throw std::invalid_argument("layout_pieces: the layout, placement and topology do not fit the window");
    const double C = static_cast<double>(topology.token_cap);
    const std::vector<int> shard_of = topology.shard_of_slot();
    MeasuredPlan out;
    out.name = name;
    out.rows = R;
    std::vector<std::uint64_t> per_expert(static_cast<std::size_t>(L) * E);
    for (int r = 0; r < R; ++r) {
        for (int d = 0; d < D; ++d) {
            const int k = r * D + d;
            MeasuredPiece pc;
            pc.attention = true;
            pc.row = r;
            pc.dp_slot = d;
            pc.edp_shard = shard_of[static_cast<std::size_t>(d)];
            for (int j = layout.offsets[k]; j < layout.offsets[k + 1]; ++j) {
                const std::int64_t t = window.samples[static_cast<std::size_t>(layout.samples[j])].length;
                ++pc.samples;
                pc.tokens += t;
                pc.sq_tokens += t * t;
            }
            for (const AttentionStage& st : topology.attention_stages)
                pc.modelled += st.alpha * static_cast<double>(pc.tokens) / C +
                               st.beta * static_cast<double>(pc.sq_tokens) / (C * C);
            out.pieces.push_back(pc);
        }
        for (int g = 0; g < topology.shards(); ++g) {
            std::fill(per_expert.begin(), per_expert.end(), 0);
            for (const int d : topology.edp_shards[static_cast<std::size_t>(g)]) {
                const int k = r * D + d;
                for (int j = layout.offsets[k]; j < layout.offsets[k + 1]; ++j) {
                    const auto counts = window.sample_counts(static_cast<std::size_t>(layout.samples[j]));
                    for (std::size_t x = 0; x < per_expert.size(); ++x)
                        per_expert[x] += counts[x];
                }
            }
            for (int l = 0; l < L; ++l) {
                for (int p = 0; p < P; ++p) {
                    MeasuredPiece pc;
                    pc.row = r;
                    pc.edp_shard = g;
                    pc.moe_layer = window.model.moe_layers[static_cast<std::size_t>(l)];
                    pc.ep_rank = p;
                    for (int e = 0; e < E; ++e) {
                        const std::uint64_t n = per_expert[static_cast<std::size_t>(l) * E + e];
                        if (n == 0 || placement.rank_of(l, e) != p) continue;
                        ++pc.experts;
                        pc.tokens += static_cast<std::int64_t>(n);
                    }
                    pc.modelled =
                        (static_cast<double>(pc.tokens) +
                         static_cast<double>(topology.expert_invocation_tokens) * static_cast<double>(pc.experts)) /
                        C;
                    out.pieces.push_back(pc);
                }
            }
        }
    }
    return out;
}

bool same_pieces(const MeasuredPlan& a, const MeasuredPlan& b) {
    if (a.rows != b.rows || a.pieces.size() != b.pieces.size()) return false;
    const auto key = [](const MeasuredPiece& p) {
        return std::make_tuple(!p.attention, p.row, p.attention ? p.dp_slot : p.edp_shard, p.moe_layer, p.ep_rank);
    };
    const auto sorted = [&](const MeasuredPlan& m) {
        std::vector<const MeasuredPiece*> v;
        for (const MeasuredPiece& p : m.pieces)
            v.push_back(&p);
        std::sort(v.begin(), v.end(),
                  [&](const MeasuredPiece* x, const MeasuredPiece* y) { return key(*x) < key(*y); });
        return v;
    };
    const auto va = sorted(a), vb = sorted(b);
    for (std::size_t i = 0; i < va.size(); ++i) {
        const MeasuredPiece &x = *va[i], &y = *vb[i];
        if (key(x) != key(y) || x.samples != y.samples || x.tokens != y.tokens || x.sq_tokens != y.sq_tokens ||
            x.experts != y.experts)
            return false;
    }
    return true;
}

std::string measured_to_json(const MeasuredStep& m) {
    using J = nlohmann::ordered_json;
    J doc;
    doc["format"] = "routepack-measured";
    doc["version"] = 1;
    doc["window"] = {{"trace", m.trace},     {"window", m.window},         {"fingerprint", m.fingerprint},
                     {"samples", m.samples}, {"moe_layers", m.moe_layers}, {"experts", m.experts}};
    doc["topology"] = J::parse(topology_to_json(m.topology));
    doc["shapes"] = J::parse(m.shapes.empty() ? "null" : m.shapes);
    doc["timing"] = J::parse(m.timing);
    J plans = J::array();
    for (const MeasuredPlan& p : m.plans) {
        const Composition c = compose_parts(p, m.topology, m.moe_layers);
        const auto G = static_cast<std::size_t>(m.topology.shards());
        J rows = J::array();
        for (std::size_t r = 0; r < static_cast<std::size_t>(p.rows); ++r)
            rows.push_back(std::vector<double>(c.row_shard.begin() + static_cast<std::ptrdiff_t>(r * G),
                                               c.row_shard.begin() + static_cast<std::ptrdiff_t>((r + 1) * G)));
        J pieces = J::array();
        for (const MeasuredPiece& pc : p.pieces) {
            J x;
            x["kind"] = pc.attention ? "attention" : "experts";
            x["row"] = pc.row;
            if (pc.attention) {
                x["dp_slot"] = pc.dp_slot;
                x["edp_shard"] = pc.edp_shard;
                x["samples"] = pc.samples;
                x["tokens"] = pc.tokens;
                x["sq_tokens"] = pc.sq_tokens;
            } else {
                x["edp_shard"] = pc.edp_shard;
                x["moe_layer"] = pc.moe_layer;
                x["ep_rank"] = pc.ep_rank;
                x["experts"] = pc.experts;
                x["tokens"] = pc.tokens;
            }
            x["modelled"] = pc.modelled;
            x["seconds"] = pc.seconds;
            pieces.push_back(std::move(x));
        }
        J plan;
        plan["name"] = p.name;
        plan["layout_digest"] = p.layout_digest;
        plan["rows"] = p.rows;
        plan["modelled_max_u"] = p.modelled_max_u ? J(*p.modelled_max_u) : J(nullptr);
        plan["measured"] = {{"step_seconds", c.step}, {"shard_seconds", c.shard}, {"row_shard_seconds", rows}};
        plan["pieces"] = std::move(pieces);
        plans.push_back(std::move(plan));
    }
    doc["plans"] = std::move(plans);
    return doc.dump(2);
}

} // namespace routepack
