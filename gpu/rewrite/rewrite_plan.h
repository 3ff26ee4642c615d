#pragma once
// Rewrite planning: checks a RewriteRequest against the checkpoint and turns it into byte-range copy
// lists per output file (conventions in gpu/rewrite.h). Reads shard headers only; writes nothing.
#include "gpu/rewrite/request.h"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace routepack::gpu {

/// One byte-range copy: output file bytes [dst, dst+len) come from source file `src_file` at `src`.
struct CopySegment {
    std::uint64_t dst = 0;
    int src_file = 0; ///< index into RewritePlan::sources
    std::uint64_t src = 0;
    std::uint64_t len = 0;
};

/// One output safetensors file: its segments cover [0, size) exactly, in increasing dst order.
struct OutputFile {
    std::string name; ///< file name (relative to the output folder), as in the source
    std::uint64_t size = 0;
    std::vector<CopySegment> segments;
    std::uint64_t moved_bytes = 0; ///< bytes whose source is another tensor or another index
};

/// A fully checked rewrite, ready to execute. Built by plan_rewrite(); nothing written yet.
struct RewritePlan {
    std::vector<std::filesystem::path> sources;     ///< source safetensors files (absolute)
    std::vector<OutputFile> outputs;                ///< one per source file, same order
    std::vector<std::filesystem::path> other_files; ///< non-safetensors files copied verbatim (config.json, index, ...)
    std::string scheme;                             ///< a layout of core/model/moe_names.h ("hf-per-expert", ...)
    int experts = 0;
    std::vector<int> checkpoint_layers;           ///< MoE layers of the checkpoint, ascending
    std::map<int, std::vector<int>> source_index; ///< checkpoint layer -> [E]: output index d takes source index [d]
    std::map<int, int> layer_map;                 ///< plan layer -> checkpoint layer actually used
    int moved_tensors = 0;                        ///< expert (and router) tensors whose bytes move
    int expert_tensors = 0, router_tensors = 0;   ///< tensors of each role touched by the index map
    std::uint64_t total_bytes = 0;                ///< bytes written (safetensors + other files)
    std::uint64_t moved_bytes = 0;
    std::string source_fingerprint;    ///< hex FNV-1a over shard names, sizes and header bytes
    std::string placement_fingerprint; ///< hex FNV-1a over plan layers and placement rows
    std::string sidecar_json;          ///< the provenance file's text
};

/// Checks everything and builds the copy lists; writes nothing. InputError (naming the file, layer,
/// tensor or field) when: the input is missing or unreadable, a shard is malformed (safetensors reader
/// errors), the index names a missing shard or tensor, the naming scheme is not recognised, the plan and
/// checkpoint disagree (expert count, MoE layers — "plan layer 26 is not a MoE layer of the checkpoint
/// (MoE layers 1-2); use --layer-map" —, a checkpoint MoE layer without a plan row, missing expert
/// tensors), experts of one family differ in dtype/shape, a stacked tensor's bytes do not split into E
/// equal slabs, permute_router with group-limited routing (config `n_group` > 1) and a placement that
/// splits a group, the output is the input, lies inside it, or exists and is not empty, or the input's
/// sidecar says it is already in physical order of a plan (apply) or of another placement (inverse).
/// A field of config.json (n_group) or of the input's routepack-rewrite.json (output_order,
/// permute_router, plan.placement_fingerprint, plan.origin) that is missing, of the wrong type or out
/// of range is named in JsonField's wording (core/util/json_field.h): "<folder>/config.json: n_group is
/// \"4\", not an integer in 1..1048576", "<folder>/routepack-rewrite.json: permute_router is missing".
RewritePlan plan_rewrite(const RewriteRequest& req);

/// The output folder as the rewrite names it: absolute, lexically normalised, without a trailing separator
/// ("out/" names the folder "out"). plan_rewrite checks it, rewrite_checkpoint creates it.
std::filesystem::path output_path(const std::filesystem::path& p);

/// Progress: stage ("write", "verify"), bytes done, bytes total.
using RewriteProgressFn = std::function<void(const std::string& stage, std::uint64_t done, std::uint64_t total)>;

} // namespace routepack::gpu
