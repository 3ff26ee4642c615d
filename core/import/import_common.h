#pragma once
// Internal to the importers: the routes of one sample as a dense [rows][axis layers][top_k] int32
// array, turned into a SampleRecord with every check the formats share.
#include "core/import/import.h"
#include "core/import/npy.h"

#include <string>
#include <vector>

namespace routepack::detail {

/// Routes of one sample as the source lays them out.
struct RouteArray {
    std::int64_t rows = 0;
    int axis_layers = 0; ///< size of the layer axis in the source
    int top_k = 0;
    std::vector<std::int32_t> ids; ///< [rows][axis_layers][top_k]; -1 = missing route (null / -1 marker)
    /// For each axis position, the absolute decoder-layer id it stands for.
    std::vector<int> axis_layer_ids;
};

/// Which absolute layer each axis position is, given the model: an axis of num_hidden_layers is
/// "all layers" (dense ones padded), an axis of num_moe_layers is "MoE layers only". InputError
/// naming `where` when it is neither.
std::vector<int> resolve_layer_axis(int axis_layers, const ModelDescription& model, const std::string& where);

/// Metadata an importer knows about a sample besides its routes.
struct SampleMeta {
    std::string id;
    std::string source_file;
    std::string request_id;
    std::string group;
    std::optional<std::int64_t> prompt_len;
    std::optional<std::int64_t> explicit_length; ///< the format's own token count, wins when present
    std::int64_t start_offset = 0;               ///< routed_experts_start_len / prompt_start rows
    LengthRule rows_rule = LengthRule::RowsPlusOne;
};

/// Aggregates routes into a[l][e] over the model's MoE layers (dense axis positions ignored) and
/// keeps them, [L][rows][K] in the narrowest id width, as the record's SampleRoutes;
/// computes t_i by the rule (explicit tokens win; else rows + 1 + start_offset, or rows) and
/// checks: ids in 0..E-1 or -1 (missing, counted in missing_routes), no expert twice in one slot
/// list, top_k equal to the model's, per-layer sum == rows*top_k - missing. Errors name
/// "<file>: sample <id>: ...".
SampleRecord make_sample_record(const RouteArray& routes, const ModelDescription& model, const SampleMeta& meta);

/// Parsers, one per format: each calls `emit` once per sample in record order. Defined in
/// import_<format>.cpp.
using EmitFn = std::function<void(SampleRecord&&)>;
void parse_sglang(const SourceFile& f, const ModelDescription& m, const EmitFn& emit);
void parse_vllm(const SourceFile& f, const ModelDescription& m, const EmitFn& emit);
void parse_npy_file(const SourceFile& f, const ModelDescription& m, const EmitFn& emit);
void parse_npz(const SourceFile& f, const ModelDescription& m, const EmitFn& emit);
void parse_nested_json(const SourceFile& f, const ModelDescription& m, const EmitFn& emit);
void parse_nemo_rl(const SourceFile& f, const ModelDescription& m, const EmitFn& emit);
void parse_megatron(const SourceFile& f, const ModelDescription& m, const EmitFn& emit);

/// The refusal of a Python pickle (torch.save) in place of arrays, after "<path>: ".
inline constexpr const char* kPickleHint =
    "a Python pickle (torch.save), which cannot be read without Python; save the arrays with numpy instead: "
    "np.savez(path, routed_experts=t.cpu().numpy(), attention_mask=m.cpu().numpy())";
void parse_step_json(const SourceFile& f, const ModelDescription& m, const EmitFn& emit);
void parse_prompt_csv(const SourceFile& f, const ModelDescription& m, const EmitFn& emit);
/// Aggregate totals JSON, or a Megatron-LM router trace read with layer-id base `base` (the base
/// used is said in an import note).
AggregateCounts parse_aggregate(const SourceFile& f, const ModelDescription& given, LayerBase base);
/// A loads file (TraceFormat::Loads, import_loads.cpp): its [L][E] loads as totals, the model from
/// the file's moe_layers / num_hidden_layers, else `given`'s, else MoE layers 0..L-1 (experts E
/// from the rows; top_k as given, 0 when unknown). InputError "<path>: <field path> ..." (JsonField's
/// wording: "loads.json: loads[1][0] is -4, not an integer in 0..18446744073709551615").
AggregateCounts parse_loads(const SourceFile& f, const ModelDescription& given);

/// MoE layers a self-describing file lists (step JSON: non-null layer keys; CSV: Layer IDs), for
/// filling a model description given only experts/top-k. Empty when the format does not say.
std::vector<int> self_described_moe_layers(const SourceFile& f, TraceFormat format);

} // namespace routepack::detail
