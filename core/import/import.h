#pragma once
// Trace importers (trace-formats.md): format detection, per-file parsing, aggregation of
// per-token routes into a[i][l][e], streaming to a sink with progress and cancellation.
#include "core/model/trace.h"
#include "core/util/errors.h"

#include <atomic>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace routepack {

/// The closed list of importable formats (trace-formats.md §2, §3, §5).
enum class TraceFormat {
    Auto,
    SGLang,     ///< SGLang /generate responses (JSON object, array or JSONL), meta_info.routed_experts base64
    VLLM,       ///< vLLM OpenAI response JSON, choices[k].routed_experts = base64 of an .npy file
    Npy,        ///< one plain .npy array [rows][layers][top_k] = one sample
    Npz,        ///< .npz archive (stored or deflated), one sample per entry
    NestedJson, ///< nested JSON lists [rows][layers][top_k] (one array per file, or JSONL)
    NemoRL,     ///< NeMo-RL `nrlre1:<dtype>:<S>x<L>x<K>:<base64>` strings: one per line, in chat answers or NeMo Gym
                ///< results
    Megatron,   ///< Megatron-LM inference: choices[i].moe_topk_indices ndarray wrapper, or {request_id:
                ///< {routing_indices}}
    StepJson,   ///< per-request step JSON (llama4-maverick set): list of {layer id: [[ids]...] | null}
    PromptCsv,  ///< per-prompt CSV (deepseek-v2-lite set): Layer ID,Batch Number,Token,Activated Expert IDs
    Aggregate,  ///< per-layer expert totals JSON {"counts", "num_layers", "num_experts", "src"} (load-only)
    Loads,      ///< loads file: [L][E] expert loads, or {"loads", "moe_layers", "num_hidden_layers"} (load-only;
                ///< `place --loads`)
};
/// Whether a format holds per-layer expert totals only (Aggregate, Loads): imported as a load-only
/// trace (AggregateCounts through ImportSink::aggregate), usable for placement, never packed.
bool is_load_only(TraceFormat f);
const char* to_string(TraceFormat f);
/// Parses a --format value; InputError listing the valid names otherwise.
TraceFormat parse_trace_format(const std::string& name);
std::vector<std::string> trace_format_names();
/// The stack (and version) whose output a format reads, for the import dialog and the README's
/// format table: "NeMo-RL 7ea279ab / NeMo Gym" and the like; "" for Auto.
const char* format_stack(TraceFormat f);

/// One input: a file read whole, or one that its parser streams from `path` (an .npz archive, a
/// padded-batch folder of .npy files; see is_batch_folder).
struct SourceFile {
    std::filesystem::path path;
    std::string bytes; ///< the whole file; when `streamed`, at most its first 64 KiB (empty for a folder)
    bool streamed = false;
    std::uint64_t size = 0; ///< when `streamed`: the file's bytes (a batch folder: its .npy files' total)
    /// Bytes of the input, whichever way it is held.
    std::uint64_t byte_count() const { return streamed ? size : bytes.size(); }
    /// "<file stem>" (one-sample files), used as "<stem>#<k>" by multi-record formats.
    std::string stem() const { return path.stem().string(); }
    /// "<parent folder>/<file stem>", the id rule of the per-request step JSON set.
    std::string parent_and_stem() const { return path.parent_path().filename().string() + "/" + stem(); }
};

/// Guesses the format from the file name and its first bytes (a padded-batch folder is Npz).
/// Returns Auto when unknown.
TraceFormat detect_format(const SourceFile& f);

/// The stack that wrote `f`, as the import dialog shows it beside the detected format:
/// format_stack(detected), except for Npz, where the arrays beside `routed_experts` tell a padded
/// batch of verl (`attention_mask`, verl-project/verl 1dda039b agent_loop.py) from one of AReaL
/// (`r3_routing_valid`, areal-project/AReaL d3fbc53c areal/engine/r3/preprocess.py), and an
/// archive without `routed_experts` holds per-sample arrays. Reads only the archive's directory or
/// the folder's file names; "" for Auto. Never throws: an unreadable archive gets format_stack's text.
std::string detected_stack(const SourceFile& f, TraceFormat detected);

/// A padded-batch folder: a folder holding `routed_experts.npy` (verl's batch field, AReaL's routes)
/// beside the batch's other arrays as separate .npy files (attention_mask.npy, r3_routing_valid.npy,
/// responses.npy, ...), as `np.save` of each tensor writes them. It is one input, read exactly as
/// an .npz holding the same arrays (format npz); the folder's subfolders are not part of it.
bool is_batch_folder(const std::filesystem::path& p);

/// The .npy files of a padded-batch folder, sorted by name (what its fingerprint and size cover).
std::vector<std::filesystem::path> batch_folder_files(const std::filesystem::path& folder);

/// Bytes of one input as collect_trace_files returns it: the file's size, or the total of a
/// padded-batch folder's .npy files; 0 when it cannot be read.
std::uint64_t trace_input_bytes(const std::filesystem::path& p);

/// Per-layer expert totals of a load-only (aggregate) file. totals has shape [L][E].
struct AggregateCounts {
    ModelDescription model;
    std::vector<std::uint64_t> totals;
    std::string source; ///< the file's own provenance field ("src") if any
};

/// Base of the `layer` ids of a Megatron-LM router trace (router_trace_rank<r>.jsonl). At
/// NVIDIA/Megatron-LM d98e8a64 megatron/core/transformer/moe/router_trace.py writes both: the
/// training hooks (register_hooks) parse the router module's name "decoder.layers.<n>", a 0-based
/// index of the stage's layers; inference's record_indices stamps each RouterReplay's
/// `layer_number`, 1-based (TransformerLayer.layer_number).
enum class LayerBase {
    Auto, ///< detected where the file and the model show it, else refused
    Zero, ///< decoder.layers index: layer id = decoder layer
    One,  ///< layer_number: layer id - 1 = decoder layer
};
/// Parses a --router-layer-base value ("auto", "0", "1"); InputError naming the valid values.
LayerBase parse_layer_base(const std::string& text);

/// What an import needs besides the files.
struct ImportOptions {
    TraceFormat format = TraceFormat::Auto;
    /// The model that produced the trace. Required for every per-sample format; for formats whose
    /// files list their own MoE layers (step JSON, CSV) an empty moe_layers list is filled from the
    /// first file; the aggregate format describes itself.
    ModelDescription model;
    /// Base of a Megatron-LM router trace's layer ids (ignored by every other format).
    LayerBase router_layer_base = LayerBase::Auto;
};

/// Throttled progress of one import.
struct ImportProgress {
    std::size_t files_done = 0, files_total = 0;
    std::uint64_t bytes_done = 0, bytes_total = 0;
    std::size_t samples = 0;
    std::string current_file;
};
using ImportProgressFn = std::function<void(const ImportProgress&)>;

/// Receives results in input order. Throwing from a sink aborts the import.
class ImportSink {
public:
    virtual ~ImportSink() = default;
    /// Called once, before the first sample, with the resolved model and format.
    virtual void begin(const ModelDescription& model, TraceFormat format) = 0;
    virtual void sample(SampleRecord&& record) = 0;
    virtual void aggregate(AggregateCounts&& counts) = 0;
};

/// Result of an import.
struct ImportSummary {
    TraceFormat format = TraceFormat::Auto;
    ModelDescription model;
    std::size_t files = 0;
    std::size_t samples = 0;
    std::uint64_t bytes = 0;
    std::int64_t missing_routes = 0; ///< route slots with a missing marker, counted as nothing
    std::int64_t min_length = 0, max_length = 0;
    double mean_length = 0;
    std::vector<std::string> notes; ///< e.g. "dropped 3 padding rows"; printed by the CLI
    std::uint64_t fingerprint = 0;  ///< order-independent: one file's FNV-1a, or FNV-1a over the sorted per-file hashes
};

/// Expands folders recursively into their trace files (.csv .json .jsonl .npy .npz .txt .nrlre1),
/// sorted with natural_less on the path; files are taken as given. A padded-batch folder
/// (is_batch_folder) met in the walk, or given, is returned as itself, one input, and not walked. A `config.json` met
/// in a folder walk is the model's Hugging Face config, not a trace file, and is left out (import_trace reads it).
/// InputError for a missing path or when nothing is found, and "<path>: file name is not valid UTF-8
/// (byte 0xNN at index I of the path); ..." for a path that is not UTF-8 (sample ids and source files
/// are made from it).
std::vector<std::filesystem::path> collect_trace_files(const std::vector<std::filesystem::path>& inputs);

/// The Hugging Face `config.json` that describes the model of `inputs`: the one in the first input
/// folder, or beside the first input file (Library::import_trace passes folders already expanded
/// into their files); empty when there is none.
std::filesystem::path model_config_beside(const std::vector<std::filesystem::path>& inputs);

/// Imports `inputs` (files or folders): detects or checks the format, parses files in parallel
/// (oneTBB pipeline, results in input order), validates every sample (ids in range, top-k width,
/// per-layer counts == rows x top_k - missing, same layer set, unique sample ids) and hands them
/// to `sink`. Without a model in `options` (no experts / top-k) the config.json beside the
/// inputs (model_config_beside) describes it, and the summary says so in a note; a given model
/// that disagrees with that config is refused naming both. Throws InputError (naming
/// file/sample/field) or Cancelled; the sink must then discard everything (storage rolls back its
/// transaction).
ImportSummary import_trace(const std::vector<std::filesystem::path>& inputs, const ImportOptions& options,
                           ImportSink& sink, const ImportProgressFn& progress = {},
                           const std::atomic<bool>* cancel = nullptr);

/// Convenience: imports into an in-memory Trace (aggregate files are refused).
Trace import_trace_to_memory(const std::vector<std::filesystem::path>& inputs, const ImportOptions& options,
                             ImportSummary* summary = nullptr);

/// The window's per-expert loads L[l][e] = sum_i a[i][l][e] ([L][E], tokens) read straight from the
/// files, for placement alone: per-sample formats are summed sample by sample (no [n][L][E] array is
/// kept) and an aggregate file gives its totals as they are. `model` receives the resolved model,
/// `summary` (when given) import_trace's summary, its notes included (a router trace's layer base).
/// The errors of import_trace.
std::vector<std::uint64_t> import_expert_loads(const std::vector<std::filesystem::path>& inputs,
                                               const ImportOptions& options, ModelDescription* model,
                                               ImportSummary* summary = nullptr);

} // namespace routepack
