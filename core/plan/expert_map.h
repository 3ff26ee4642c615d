#pragma once
// Expert maps (reference/checkpoint-formats.md section 4): a plan's placement exported in the shapes
// serving and training stacks load, and the one reader of those shapes (and of a plan file) as a
// placement of a model's MoE layers.
#include "core/model/model.h"
#include "core/plan/score/placement.h"
#include "core/plan/search/migration.h"

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace routepack {

struct PlanFile;

/// Output shapes of `routepack export-map`.
enum class ExpertMapFormat {
    RoutePack, ///< our JSON: placement (logical -> slot) and physical_to_logical_map, rows = MoE layers
    SGLang,    ///< {"physical_to_logical_map": [num_hidden_layers][E]}: rows = ABSOLUTE decoder layers;
               ///< dense layers get the trivial row arange(E) (SGLang keeps rows for them)
    VLLM,      ///< {"physical_to_logical_map": [num_moe_layers][E]}: rows = MoE layers only (as EPLB)
};
/// "routepack" | "sglang" | "vllm"; InputError listing the valid names otherwise.
ExpertMapFormat parse_expert_map_format(const std::string& name);

/// physical_to_logical_map[l][pi_l(e)] = e for each MoE layer, in the requested layout, as JSON text.
/// `model` gives num_hidden_layers and the absolute moe_layers (placement layer l = moe_layers[l]).
/// std::invalid_argument when a placement row is not a permutation of 0..E-1.
std::string expert_map_json(const Placement& pi, const ModelDescription& model, ExpertMapFormat format);

/// A placement read from an expert map file (`routepack rewrite --map`, the studio's rewrite dialog, a previous
/// placement),
/// without a plan. Accepted shapes (reference/checkpoint-formats.md section 4):
/// - our `routepack export-map --format routepack` file: {"format": "routepack-expert-map", "version": 1,
///   "moe_layers": [L], "num_hidden_layers", "experts", "ep_ranks", "placement": [L][E] (logical expert
///   -> physical slot), "physical_to_logical_map": [L][E] (checked to be the inverse)};
/// - the minimal {"moe_layers": [L], "placement": [L][E]} (absolute decoder-layer ids, logical -> slot);
/// - {"physical_to_logical_map": [R][S]} (our `--format sglang|vllm` exports, SGLang's
///   `--init-expert-location` JSON, sgl-project/sglang python/sglang/srt/eplb/expert_location.py; vLLM's
///   EplbState.physical_to_logical_map, vllm/distributed/eplb/eplb_state.py), or that list alone, with an
///   optional "moe_layers" [R]. Without it the rows carry no absolute layer ids: SGLang rows are decoder
///   layers 0..R-1, vLLM rows the MoE layers in order; request_from_map takes them from config.json.
/// Every row must be a permutation (one physical slot per logical expert): a row with replicas (more
/// physical slots than experts, redundant experts of SGLang/vLLM/EPLB) is refused with that reason.
struct ExpertMapFile {
    std::string kind;                  ///< "routepack export-map", "{moe_layers, placement}", "physical_to_logical_map"
    std::vector<int> moe_layers;       ///< absolute decoder-layer ids of the rows; empty: the rows carry none
    int num_hidden_layers = 0;         ///< as written (0: not given)
    int ep_ranks = 1;                  ///< as written in a routepack file (1 otherwise; the rewrite ignores ranks)
    bool ep_ranks_given = false;       ///< the file wrote ep_ranks (a routepack export-map file)
    std::vector<std::vector<int>> p2l; ///< [rows][E]: physical slot v -> logical expert at that row
};

/// Parses an expert map (shapes above); a list alone is read as its physical_to_logical_map. Every
/// field is read by util::JsonField, so a field of the wrong type or range is an InputError
/// "<origin>: <path> is missing" or "<origin>: <path> is <value>, not <expected>":
/// "m.json is 5, not an expert map: ..." (neither a list nor an object), "m.json: placement is [], not a
/// non-empty list of rows", "m.json: placement[1] is 5, not a non-empty list of integers",
/// "m.json: physical_to_logical_map[2][5] is -1, not an integer in 0..15" (a row of 16 entries),
/// "m.json: moe_layers is missing" (beside placement), "m.json: moe_layers is 3, not a list of layer
/// ids", "m.json: moe_layers[0] is -1, not an integer in 0..999999999", "m.json: num_hidden_layers is
/// 0, not an integer in 1..1000000000"; in a routepack export-map file "m.json: format is \"x\", not
/// \"routepack-expert-map\"", "m.json: version is 2, not 1 (the only routepack-expert-map version)",
/// "m.json: layer_axis is \"x\", not \"moe_layers\"", "m.json: experts is \"16\", not an integer",
/// "m.json: ep_ranks is 0, not an integer in 1..16". The other errors start with the field's path:
/// "m.json: not an expert map (no 'physical_to_logical_map' or 'placement'); expected ...";
/// "m.json: unknown field 'moe_layer' (an expert map holds ...)"; rows of different lengths
/// ("m.json: physical_to_logical_map[1] has 6 entries, physical_to_logical_map[0] has 4"); an id at or
/// above its row's length ("m.json: physical_to_logical_map[0] has 3 entries but
/// physical_to_logical_map[0][2] is 5 (a row of 3 entries holds each of 0..2 once; is an entry
/// missing?)"); a row that is no permutation ("m.json: physical_to_logical_map[1] is not a permutation
/// of 0..2: expert 0 is missing and expert 2 is in slots 0 and 1"; "m.json: placement[1] puts experts
/// 0 and 1 in slot 1 (each logical expert needs its own slot)"); a row with replicas ("m.json:
/// physical_to_logical_map[1] has 18 physical slots for 16 logical experts (expert 0 is in slots 0 and
/// 16): a map with replicas (redundant experts) cannot rewrite a checkpoint, which holds each expert
/// once"); "m.json: moe_layers lists 1 layers for 2 rows"; "m.json: moe_layers must be ascending
/// (moe_layers[1] = 1 after 2)"; "m.json: num_hidden_layers 4 must be a layer count above every MoE
/// layer id"; a routepack file's "m.json: physical_to_logical_map[0] is not the inverse of
/// placement[0]", "m.json: physical_to_logical_map has 2 rows, placement 1", "m.json: experts 4
/// differs from the 3 entries of each placement row", "m.json: ep_ranks 3 must divide the 16 experts".
/// JSON syntax: "<origin>: malformed JSON at byte B: <description>".
ExpertMapFile parse_expert_map_text(const std::string& json_text, const std::string& origin);

/// Reads and parses an expert map file (read_input_file, kExpertMap; errors name the path).
ExpertMapFile read_expert_map_file(const std::string& path);

/// The placement of `model`'s MoE layers held by an expert map, as every reader of a map takes it
/// (a previous placement in the CLI and Python, the rewriter's map without layer ids). Rows are matched
/// to layers by one rule: the map's moe_layers when it has them (they must equal model.moe_layers);
/// otherwise R = L rows are the MoE layers in order (vLLM, EPLB), and R = num_hidden_layers rows are the
/// decoder layers (SGLang), whose dense layers' rows must be the identity 0..E-1 (SGLang writes the
/// trivial row for them). A routepack export-map file's ep_ranks must equal `ep_ranks` (the slots would
/// belong to other ranks); `ep_ranks` 0 skips that check (the rewriter, which ignores ranks).
/// `against` names what the map is matched to in messages ("the window", a config.json path).
/// Result: [L][E] logical expert -> physical slot, ep_ranks = `ep_ranks` (1 when 0).
/// InputError "<origin>: ...": "the map has MoE layers 0-25, the window 1-26"; "the map has 27 rows;
/// the window has 26 MoE layers and 27 decoder layers" (neither shape); "physical_to_logical_map[0] is
/// decoder layer 0, a dense layer of the window: its row must be the identity 0..63 (SGLang's trivial
/// row), but slot 0 holds expert 5"; "the map has 64 experts per layer, the window 128"; "the map is on
/// 16 EP ranks, the topology has 8".
Placement placement_from_map(const ExpertMapFile& map, const ModelDescription& model, int ep_ranks,
                             const std::string& origin, const std::string& against);

/// The placement a plan file holds, as a previous placement for `model` on `ep_ranks` EP ranks: the
/// plan's model.moe_layers, experts and topology.ep_ranks must equal the window's. InputError
/// "<origin>: the plan has MoE layers 0-25, the window 1-26", "... 64 experts per layer, the window
/// 128", "<origin>: the plan is on 16 EP ranks, the topology has 8".
Placement placement_from_plan(const PlanFile& plan, const ModelDescription& model, int ep_ranks,
                              const std::string& origin);

/// A previous placement (`--previous`, Python's previous=) from the text of a plan file (format
/// "routepack-plan", parse_plan) or of an expert map (parse_expert_map_text), checked against the
/// window's model and the topology's EP ranks (placement_from_plan, placement_from_map). InputError
/// naming `origin` and the field; JSON syntax errors as "<origin>: <what and where>".
Placement previous_placement_from_text(const std::string& text, const std::string& origin,
                                       const ModelDescription& model, int ep_ranks);

/// previous_placement_from_text of the file at `path`, read by read_input_file (kind kPreviousPlacement:
/// a FIFO, device or folder is refused unread, at most 256 MiB); errors name the path.
Placement read_previous_placement(const std::filesystem::path& path, const ModelDescription& model, int ep_ranks);

/// Where a step starts: the previous placement and, when the previous plan recorded one, the run's
/// history (its "history" section, plan version 10; an expert map has none).
struct PreviousStep {
    Placement placement;
    std::optional<RunHistory> history;
};

/// previous_placement_from_text with the plan's history: the one reader of `--previous`, whose history
/// shape is the plan's model (checked against the window's by placement_from_plan).
PreviousStep previous_step_from_text(const std::string& text, const std::string& origin, const ModelDescription& model,
                                     int ep_ranks);

/// previous_step_from_text of the file at `path` (read as read_previous_placement reads it).
PreviousStep read_previous_step(const std::filesystem::path& path, const ModelDescription& model, int ep_ranks);

} // namespace routepack
