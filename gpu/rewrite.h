#pragma once
// Checkpoint rewriter: makes expert state follow a plan's placement. Qt-free.
//
// Conventions (shared/reference/checkpoint-formats.md section 4). A placement row pi_l maps logical
// expert e to physical slot v = pi_l(e); physical_to_logical_map[l][v] = e.
//   apply   (logical -> physical): output index v receives source index p2l[l][v]
//   inverse (physical -> logical): output index e receives source index pi_l(e)
// "Index" is the expert number in a per-expert tensor name (`experts.{e}.`) or the position on axis 0 of
// a stacked [E, ...] tensor. Tensor names, dtypes, shapes, shard files, every file's header bytes and
// model.safetensors.index.json stay exactly as in the source; only the bytes of expert-indexed tensors
// move. So apply then inverse reproduces every source file byte for byte, and an identity placement
// reproduces them in one step. Routers ([E, H]) and router biases / e_score_correction_bias ([E]) move
// only with `permute_router` (self-contained inference checkpoints), by the same index map.
//
// The rewrite is planned completely (every check below) before anything is written, then executed as a
// list of byte-range copies per output file, by the CPU (oneTBB, copy_file_range / pread+pwrite,
// bounded memory) or the CUDA executor (pinned staging, streams, device gather kernel). Output goes to a
// temporary sibling folder renamed into place when complete; the provenance sidecar
// `routepack-rewrite.json` (plan and placement fingerprints, direction, source fingerprint, layer map,
// physical_to_logical_map rows) is written into it.
#include "core/model/model.h"
#include "core/plan/placement.h"

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
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
    std::filesystem::path input;    ///< checkpoint folder (sharded or one model.safetensors) or one .safetensors file
    std::filesystem::path output;   ///< folder to create; must not exist (or be an empty folder), never the input
    Placement placement;            ///< [L][E] logical expert -> physical slot; row l is plan layer plan_layers[l]
    std::vector<int> plan_layers;   ///< absolute decoder-layer ids of the placement rows (the plan's model.moe_layers)
    ModelDescription plan_model;    ///< the plan's model (used to classify when the input has no config.json)
    std::string plan_fingerprint;   ///< the plan's inputs.fingerprint (provenance only)
    std::string plan_origin;        ///< the plan file (messages, provenance)
    RewriteDirection direction = RewriteDirection::Apply;
    bool permute_router = false;    ///< also permute router rows and router biases (self-contained export)
    std::map<int, int> layer_map;   ///< plan layer -> checkpoint layer; empty = the same ids
    RewriteDevice device = RewriteDevice::Auto;
    bool verify = false;            ///< re-read the output and compare every tensor with its source
    int workers = 0;                ///< CPU threads (0 = all cores)
};

/// One byte-range copy: output file bytes [dst, dst+len) come from source file `src_file` at `src`.
struct CopySegment {
    std::uint64_t dst = 0;
    int src_file = 0;   ///< index into RewritePlan::sources
    std::uint64_t src = 0;
    std::uint64_t len = 0;
};

/// One output safetensors file: its segments cover [0, size) exactly, in increasing dst order.
struct OutputFile {
    std::string name;     ///< file name (relative to the output folder), as in the source
    std::uint64_t size = 0;
    std::vector<CopySegment> segments;
    std::uint64_t moved_bytes = 0;  ///< bytes whose source is another tensor or another index
};

/// A fully checked rewrite, ready to execute. Built by plan_rewrite(); nothing written yet.
struct RewritePlan {
    std::vector<std::filesystem::path> sources;   ///< source safetensors files (absolute)
    std::vector<OutputFile> outputs;              ///< one per source file, same order
    std::vector<std::filesystem::path> other_files;  ///< non-safetensors files copied verbatim (config.json, index, ...)
    std::string scheme;                           ///< hf-per-expert | hf-stacked | megatron-stacked
    int experts = 0;
    std::vector<int> checkpoint_layers;           ///< MoE layers of the checkpoint, ascending
    std::map<int, std::vector<int>> source_index; ///< checkpoint layer -> [E]: output index d takes source index [d]
    std::map<int, int> layer_map;                 ///< plan layer -> checkpoint layer actually used
    int moved_tensors = 0;                        ///< expert (and router) tensors whose bytes move
    int expert_tensors = 0, router_tensors = 0;   ///< tensors of each role touched by the index map
    std::uint64_t total_bytes = 0;                ///< bytes written (safetensors + other files)
    std::uint64_t moved_bytes = 0;
    std::string source_fingerprint;               ///< hex FNV-1a over shard names, sizes and header bytes
    std::string placement_fingerprint;            ///< hex FNV-1a over plan layers and placement rows
    std::string sidecar_json;                     ///< the provenance file's text
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
RewritePlan plan_rewrite(const RewriteRequest& req);

/// What a rewrite did.
struct RewriteReport {
    std::string device;             ///< "cpu" or "cuda (<name>)"
    std::uint64_t bytes_written = 0;
    std::uint64_t moved_bytes = 0;
    int files = 0;
    int moved_tensors = 0;
    double seconds = 0;             ///< execute (write + sync), without planning and verification
    double verify_seconds = 0;
    bool verified = false;
    double gb_per_s() const { return seconds > 0 ? static_cast<double>(bytes_written) / seconds / 1e9 : 0; }
};

/// Progress: stage ("write", "verify"), bytes done, bytes total.
using RewriteProgressFn = std::function<void(const std::string& stage, std::uint64_t done, std::uint64_t total)>;

/// Plans and executes: checks free space on the output's file system, writes into a temporary sibling
/// folder, syncs, renames it to req.output. With req.verify re-reads every output file and compares
/// each segment with its source. On any error or cancellation the temporary folder is removed and
/// nothing is left at req.output; InputError for bad input, "cancelled" when `cancel` was set.
RewriteReport rewrite_checkpoint(const RewriteRequest& req, const RewriteProgressFn& progress = {},
                                 const std::atomic<bool>* cancel = nullptr);

/// Executes a planned rewrite into `dir` (existing, empty) with the CPU executor. Returns bytes written.
std::uint64_t execute_rewrite_cpu(const RewritePlan& plan, const std::filesystem::path& dir, int workers,
                                  const RewriteProgressFn& progress, const std::atomic<bool>* cancel);

/// Compares every output file in `dir` with the bytes its segments name. Returns "" when equal, else the
/// first difference in words (file, tensor, offset).
std::string verify_rewrite(const RewritePlan& plan, const std::filesystem::path& dir,
                           const RewriteProgressFn& progress = {}, const std::atomic<bool>* cancel = nullptr);

}  // namespace routepack::gpu
