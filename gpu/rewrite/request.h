#pragma once
// A checkpoint rewrite request: what to rewrite and how, and the plan's part of it. Qt-free and
// CLI11-free, so that `routepack rewrite` (app/cmd_rewrite.cpp) and the studio's rewrite dialog build
// the same request from the same plan file (see gpu/rewrite.h for the conventions).
#include "core/model/model.h"
#include "core/plan/placement.h"
#include "core/plan/plan_file.h"

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace routepack::gpu {

enum class RewriteDirection { Apply, Inverse };
enum class RewriteDevice { Auto, Cpu, Cuda };

/// "auto" | "cpu" | "cuda"; InputError listing the valid names otherwise.
RewriteDevice parse_rewrite_device(const std::string& name);

/// The sidecar's file name in a rewritten folder.
inline constexpr const char* kRewriteSidecar = "routepack-rewrite.json";

/// Parses `--layer-map` text mapping plan layer ids to checkpoint layer ids: comma-separated items
/// `P:C` (plan layer P is checkpoint layer C), `P-Q:C` (plan layers P..Q are C..C+Q-P) or a shift
/// `+N` / `-N` (every plan layer l is checkpoint layer l+N). Result: plan layer -> checkpoint layer.
/// InputError naming `--layer-map` on malformed text, a plan layer listed twice, two plan layers mapped
/// to one checkpoint layer, or a negative checkpoint layer.
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
    int workers = 0;     ///< CPU threads (0 = all cores)
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

/// Bytes as "1.23 GB" from 1 GB on and "4.56 MB" below (the unit of the rewrite summary).
std::string format_gb(std::uint64_t bytes);

} // namespace routepack::gpu
