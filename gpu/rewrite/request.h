#pragma once
// A checkpoint rewrite request: what to rewrite and how, and the plan's part of it. Qt-free and
// CLI11-free, so that `routepack rewrite` (app/cmd_rewrite.cpp) and the studio's rewrite dialog build
// the same request from the same plan file (see gpu/rewrite.h for the conventions).
#include "core/model/model.h"
#include "core/plan/expert_map.h"
#include "core/plan/plan_file.h"
#include "core/plan/score/placement.h"

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace routepack::gpu {

enum class RewriteDirection { Apply, Inverse };
enum class RewriteDevice { Auto, Cpu, Cuda };

/// A setting of the rewrite as its InputErrors name it (core/util/errors.h): key "rewrite_" + `name`,
/// for `name` one of "input", "output", "device", "layer_map", "workers", "permute_router", "verify"
/// (the RewriteRequest fields) and "inverse" (RewriteDirection::Inverse); words "input", "output",
/// "device", "layer map", "workers", "router permutation", "verification", "inverse rewrite",
/// followed by " " + `value` when given ("device cuda"). Throws std::logic_error for another name.
Setting rewrite_setting(std::string_view name, const std::string& value = {});

/// "auto" | "cpu" | "cuda"; InputError listing the valid names otherwise.
RewriteDevice parse_rewrite_device(const std::string& name);

/// Most CPU threads a rewrite may be given (RewriteRequest::workers in 0..kMaxRewriteWorkers).
inline constexpr int kMaxRewriteWorkers = 1024;

/// The sidecar's file name in a rewritten folder.
inline constexpr const char* kRewriteSidecar = "routepack-rewrite.json";

/// Parses `--layer-map` text mapping plan layer ids to checkpoint layer ids: comma-separated items
/// `P:C` (plan layer P is checkpoint layer C), `P-Q:C` (plan layers P..Q are C..C+Q-P) or a shift
/// `+N` / `-N` (every plan layer l is checkpoint layer l+N). Result: plan layer -> checkpoint layer.
/// InputError about rewrite_setting("layer_map") ("layer map: empty") on malformed text, a plan layer listed twice, two
/// plan layers mapped to one checkpoint layer, or a negative checkpoint layer.
std::map<int, int> parse_layer_map(const std::string& text, const std::vector<int>& plan_layers);

/// What to rewrite and how.
struct RewriteRequest {
    std::filesystem::path input;  ///< checkpoint folder (sharded or one model.safetensors) or one .safetensors file
    std::filesystem::path output; ///< folder to create; must not exist (or be an empty folder), never the input
    Placement placement;          ///< [L][E] logical expert -> physical slot; row l is plan layer plan_layers[l]
    std::vector<int> plan_layers; ///< absolute decoder-layer ids of the placement rows (the plan's model.moe_layers)
    ModelDescription plan_model;  ///< the plan's model (used to classify when the input has no config.json)
    std::string plan_fingerprint; ///< the plan's inputs.fingerprint (provenance only)
    std::string plan_origin;      ///< the plan file (messages, provenance)
    RewriteDirection direction = RewriteDirection::Apply;
    bool permute_router = false;  ///< also permute router rows and router biases (self-contained export)
    std::map<int, int> layer_map; ///< plan layer -> checkpoint layer; empty = the same ids
    RewriteDevice device = RewriteDevice::Auto;
    bool verify = false; ///< re-read the output and compare every tensor with its source
    int workers = 0;     ///< CPU threads (0 = all cores; at most kMaxRewriteWorkers)
};

/// parse_plan, with JSON syntax errors also reported as InputError "<origin>: <what and where>".
PlanFile parse_plan_text(const std::string& json_text, const std::string& origin);

/// Reads and parses a plan file: InputError "<path>: no such plan file", "<path>: not a regular file",
/// "<path>: cannot read plan", or parse_plan_text's errors (origin = path).
PlanFile read_plan_file(const std::string& path);

/// A rewrite request carrying the plan's part: placement, plan_layers (the plan's model.moe_layers),
/// plan_model, plan_fingerprint and plan_origin = `origin` (named in errors and the sidecar). The
/// checkpoint's part (input, output, direction, layer map, device, ...) keeps RewriteRequest's defaults.
/// Shared by `routepack rewrite` and the studio's rewrite dialog, so both rewrite the same way.
RewriteRequest request_from_plan(const PlanFile& plan, const std::string& origin);

// The expert map reader is core's (core/plan/expert_map.h), one for every reader of a map.
using routepack::ExpertMapFile;
using routepack::parse_expert_map_text;
using routepack::read_expert_map_file;

/// A rewrite request carrying the map's placement (as request_from_plan does for a plan): plan_layers =
/// the map's moe_layers, or, when the rows carry none, the MoE layers of the config.json beside
/// `checkpoint` (the folder, or the folder of a .safetensors file), the rows matched by
/// placement_from_map (R rows = its MoE layers in order (vLLM), or R = num_hidden_layers rows =
/// decoder layers (SGLang), each dense layer's row the identity). plan_model: experts E, those layers,
/// num_hidden_layers (given, config's, or max + 1); plan_fingerprint "" and plan_origin = `origin`.
/// InputError "<origin>: the map's rows carry no absolute layer ids (SGLang rows are decoder layers,
/// vLLM rows MoE layers in order) and <dir> has no config.json to take them from; ...", or
/// placement_from_map's errors with `against` = the config.json path ("<origin>: the map has R rows;
/// <config.json> has L MoE layers (vLLM: one row each) and H decoder layers (SGLang: one row each)").
RewriteRequest request_from_map(const ExpertMapFile& map, const std::string& origin,
                                const std::filesystem::path& checkpoint);

/// Bytes as "1.23 GB" from 1 GB on and "4.56 MB" below (the unit of the rewrite summary).
std::string format_gb(std::uint64_t bytes);

} // namespace routepack::gpu
