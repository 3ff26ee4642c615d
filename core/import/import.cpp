#include "core/import/import.h"

#include "core/import/import_detail.h"
#include "core/util/input_file.h"
#include "core/util/text.h"

#include <tbb/info.h>
#include <tbb/parallel_invoke.h>
#include <tbb/parallel_pipeline.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <fstream>
#include <numeric>
#include <unordered_map>

namespace routepack {

namespace {

struct FormatName {
    TraceFormat format;
    const char* name;
};
constexpr FormatName kFormats[] = {
    {TraceFormat::Auto, "auto"},
    {TraceFormat::SGLang, "sglang"},
    {TraceFormat::VLLM, "vllm"},
    {TraceFormat::Npy, "npy"},
    {TraceFormat::Npz, "npz"},
    {TraceFormat::NestedJson, "nested-json"},
    {TraceFormat::NemoRL, "nrlre1"},
    {TraceFormat::Megatron, "megatron"},
    {TraceFormat::StepJson, "step-json"},
    {TraceFormat::PromptCsv, "prompt-csv"},
    {TraceFormat::Aggregate, "aggregate"},
    {TraceFormat::Loads, "loads"},
};

/// The format names, comma-separated, in table order ("auto" first when `with_auto`).
std::string format_names(bool with_auto) {
    std::string list;
    for (const auto& fn : kFormats)
        if (with_auto || fn.format != TraceFormat::Auto) list += (list.empty() ? "" : ", ") + std::string(fn.name);
    return list;
}

std::string read_whole_file(const std::filesystem::path& p) {
    return read_input_file(p, input_files::kTraceFile);
}

// First bytes of a streamed file kept for format detection and the pickle check.
constexpr std::size_t kHeadBytes = std::size_t(64) << 10;

/// One input ready for its parser. A padded-batch folder and an .npz archive (by extension or zip
/// magic) are streamed by their parser: only their size and first bytes are read here, so a batch
/// of any size never sits in memory whole (no size cap: memory does not follow it). Any other
/// file is read whole within the trace-file cap.
SourceFile load_source(const std::filesystem::path& p) {
    SourceFile f;
    f.path = p;
    std::error_code ec;
    if (std::filesystem::is_directory(p, ec)) {
        f.streamed = true;
        for (const auto& member : batch_folder_files(p))
            f.size += check_input_file(member, input_files::kTraceFile);
        return f;
    }
    const std::uint64_t size = check_input_file(p, input_files::kTraceFile);
    std::ifstream in(p, std::ios::binary);
    if (!in) throw InputError(p.string() + ": cannot open trace file");
    std::string head(static_cast<std::size_t>(std::min<std::uint64_t>(size, kHeadBytes)), '\0');
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    head.resize(static_cast<std::size_t>(in.gcount()));
    if (p.extension() == ".npz" || head.rfind("PK\x03\x04", 0) == 0) {
        f.streamed = true;
        f.size = size;
        f.bytes = std::move(head);
        return f;
    }
    f.bytes = read_whole_file(p);
    return f;
}

/// FNV-1a of a streamed input read in chunks (the same value as over its bytes read whole); a
/// batch folder yields one hash per .npy file.
std::vector<std::uint64_t> streamed_hashes(const SourceFile& f) {
    std::vector<std::filesystem::path> members;
    std::error_code ec;
    if (std::filesystem::is_directory(f.path, ec))
        members = batch_folder_files(f.path);
    else
        members.push_back(f.path);
    std::vector<std::uint64_t> out;
    std::vector<char> buf(std::size_t(1) << 20);
    for (const auto& m : members) {
        std::ifstream in(m, std::ios::binary);
        if (!in) throw InputError(m.string() + ": cannot open trace file");
        std::uint64_t h = 0xcbf29ce484222325ULL;
        while (in) {
            in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
            h = fnv1a64(buf.data(), static_cast<std::size_t>(in.gcount()), h);
        }
        if (in.bad()) throw InputError(m.string() + ": read error");
        out.push_back(h);
    }
    return out;
}

bool is_trace_extension(const std::filesystem::path& p) {
    const auto ext = p.extension().string();
    return ext == ".csv" || ext == ".json" || ext == ".jsonl" || ext == ".npy" || ext == ".npz" || ext == ".txt" ||
           ext == ".nrlre1";
}

std::size_t skip_ws(const std::string& s, std::size_t i) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\n' || s[i] == '\r' || s[i] == '\t'))
        ++i;
    return i;
}

} // namespace

const char* to_string(TraceFormat f) {
    for (const auto& fn : kFormats)
        if (fn.format == f) return fn.name;
    return "?";
}

const char* format_stack(TraceFormat f) {
    switch (f) {
    case TraceFormat::SGLang:
        return "SGLang /generate (slime's patched SGLang too)";
    case TraceFormat::VLLM:
        return "vLLM OpenAI server (v0.21 nested lists or base64 .npy)";
    case TraceFormat::Npy:
        return "numpy .npy arrays";
    case TraceFormat::Npz:
        return "numpy .npz (per-sample arrays, or a verl / AReaL padded batch as .npz or a folder of .npy)";
    case TraceFormat::NestedJson:
        return "nested JSON lists";
    case TraceFormat::NemoRL:
        return "NeMo-RL / NeMo Gym (nrlre1)";
    case TraceFormat::Megatron:
        return "Megatron-LM inference server / example script";
    case TraceFormat::StepJson:
        return "per-request step JSON (llama4-maverick set)";
    case TraceFormat::PromptCsv:
        return "per-prompt CSV (deepseek-v2-lite set)";
    case TraceFormat::Aggregate:
        return "SGLang expert-distribution totals or Megatron-LM router trace (load-only)";
    case TraceFormat::Loads:
        return "[L][E] expert loads, the loads file of routepack place (load-only)";
    case TraceFormat::Auto:
        break;
    }
    return "";
}

bool is_load_only(TraceFormat f) {
    return f == TraceFormat::Aggregate || f == TraceFormat::Loads;
}

std::vector<std::string> trace_format_names() {
    std::vector<std::string> out;
    for (const auto& fn : kFormats)
        out.emplace_back(fn.name);
    return out;
}

TraceFormat parse_trace_format(const std::string& name) {
    for (const auto& fn : kFormats)
        if (name == fn.name) return fn.format;
    throw InputError("unknown format '" + detail::printable(name) + "' (valid: " + format_names(true) + ")");
}

LayerBase parse_layer_base(const std::string& text) {
    if (text == "auto") return LayerBase::Auto;
    if (text == "0") return LayerBase::Zero;
    if (text == "1") return LayerBase::One;
    throw InputError("unknown router trace layer base '" + detail::printable(text) + "' (valid: auto, 0, 1)");
}

TraceFormat detect_format(const SourceFile& f) {
    const auto ext = f.path.extension().string();
    const std::string& b = f.bytes;
    if (b.empty() && is_batch_folder(f.path)) return TraceFormat::Npz;
    if (ext == ".npy" || b.rfind("\x93NUMPY", 0) == 0) return TraceFormat::Npy;
    if (ext == ".npz" || b.rfind("PK\x03\x04", 0) == 0) return TraceFormat::Npz;
    if (ext == ".csv") return TraceFormat::PromptCsv;
    const std::size_t i = skip_ws(b, detail::bom_length(b));
    if (b.compare(i, 7, "nrlre1:") == 0) return TraceFormat::NemoRL;
    if (i >= b.size()) return TraceFormat::Auto;
    if (b[i] == '{' || b[i] == '[') {
        // Stack-specific keys may come after long texts: searched in the whole file.
        if (b.find("\"nrlre1:") != std::string::npos) return TraceFormat::NemoRL;
        if (b.find("\"moe_topk_indices\"") != std::string::npos || b.find("\"routing_indices\"") != std::string::npos)
            return TraceFormat::Megatron;
        // NeMo-RL chat answers with the legacy nested-list routed_experts beside its token ids.
        if (b.find("\"generation_token_ids\"") != std::string::npos &&
            b.find("\"routed_experts\"") != std::string::npos)
            return TraceFormat::NemoRL;
    }
    // Look at the first few KiB for distinguishing keys; cheap and good enough for the closed list.
    const std::string head = b.substr(i, 4096);
    if (head[0] == '[') {
        const std::size_t j = skip_ws(b, i + 1);
        if (j < b.size() && b[j] == '{') {
            if (head.find("\"meta_info\"") != std::string::npos) return TraceFormat::SGLang;
            if (head.find("\"choices\"") != std::string::npos) return TraceFormat::VLLM;
            return TraceFormat::StepJson;
        }
        if (j < b.size() && (b[j] == '[' || b[j] == ']')) return TraceFormat::NestedJson;
        return TraceFormat::Auto;
    }
    if (head[0] == '{') {
        if (head.find("\"meta_info\"") != std::string::npos) return TraceFormat::SGLang;
        if (head.find("\"choices\"") != std::string::npos) return TraceFormat::VLLM;
        // Derived counts JSON: {"counts": [[...]], "num_layers", "num_experts", "src"} (keys may come late).
        if (head.find("\"counts\"") != std::string::npos &&
            (head.find("\"num_experts\"") != std::string::npos || b.find("\"num_experts\"") != std::string::npos))
            return TraceFormat::Aggregate;
        if (head.find("\"top_indices\"") != std::string::npos && head.find("\"num_tokens\"") != std::string::npos)
            return TraceFormat::Aggregate; // Megatron-LM router trace (load-only)
        // A loads file in its object form (the bare [L][E] list reads as nested JSON: give --format loads).
        if (head.find("\"loads\"") != std::string::npos) return TraceFormat::Loads;
        if (head.find("\"data\"") != std::string::npos) return TraceFormat::NestedJson;
    }
    return TraceFormat::Auto;
}

bool is_batch_folder(const std::filesystem::path& p) {
    std::error_code ec;
    return std::filesystem::is_directory(p, ec) && std::filesystem::is_regular_file(p / "routed_experts.npy", ec);
}

std::vector<std::filesystem::path> batch_folder_files(const std::filesystem::path& folder) {
    std::vector<std::filesystem::path> out;
    std::error_code ec;
    for (std::filesystem::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
        std::error_code e2;
        if (it->path().extension() == ".npy" && it->is_regular_file(e2)) out.push_back(it->path());
    }
    if (ec) throw InputError(folder.string() + ": cannot read folder (" + ec.message() + ")");
    std::sort(out.begin(), out.end());
    return out;
}

std::uint64_t trace_input_bytes(const std::filesystem::path& p) {
    std::error_code ec;
    if (!is_batch_folder(p)) {
        const auto n = std::filesystem::file_size(p, ec);
        return ec ? 0 : n;
    }
    std::uint64_t total = 0;
    try {
        for (const auto& f : batch_folder_files(p)) {
            const auto n = std::filesystem::file_size(f, ec);
            total += ec ? 0 : n;
        }
    } catch (const InputError&) {
        return 0;
    }
    return total;
}

std::vector<std::filesystem::path> collect_trace_files(const std::vector<std::filesystem::path>& inputs) {
    namespace fs = std::filesystem;
    std::vector<fs::path> files;
    for (const auto& in : inputs) {
        std::error_code ec;
        const auto status = fs::status(in, ec);
        // A regular file and a padded-batch folder are one input each; other folders are walked.
        if (fs::is_regular_file(status) || (fs::is_directory(status) && is_batch_folder(in))) {
            files.push_back(in);
        } else if (fs::is_directory(status)) {
            std::vector<fs::path> found;
            auto fail = [&](const fs::path& where, const std::error_code& e) {
                throw InputError(where.string() + ": cannot read folder (" + e.message() + ")");
            };
            fs::recursive_directory_iterator it(in, ec), end;
            if (ec) fail(in, ec);
            fs::path current = in; // the folder being read: the last subfolder entered, else its parent
            while (it != end) {
                std::error_code e2;
                const bool dir = it->is_directory(e2);
                if (dir && is_batch_folder(it->path())) {
                    found.push_back(it->path()); // one input; its subfolders are not walked
                    it.disable_recursion_pending();
                } else if (it->is_regular_file(e2) && is_trace_extension(it->path()) &&
                           it->path().filename() != "config.json")
                    found.push_back(it->path());
                current = dir ? it->path() : it->path().parent_path();
                it.increment(ec);
                if (ec) fail(current, ec);
            }
            if (found.empty()) throw InputError(in.string() + ": folder holds no trace files");
            std::sort(found.begin(), found.end(),
                      [](const auto& a, const auto& b) { return natural_less(a.string(), b.string()); });
            files.insert(files.end(), found.begin(), found.end());
        } else if (fs::exists(status)) {
            throw InputError(in.string() + ": not a regular file or folder (devices, pipes and sockets are not trace "
                                           "files)");
        } else if (ec && ec != std::errc::no_such_file_or_directory && ec != std::errc::not_a_directory) {
            throw InputError(in.string() + ": cannot open (" + ec.message() + ")");
        } else {
            throw MissingFileError(in.string() + ": no such file or folder", in);
        }
    }
    if (files.empty()) throw InputError("no input files");
    for (const auto& f : files) {
        // Sample ids and source files are made from these paths and kept as UTF-8 text (the
        // library, plan files, JSON and Python strings): a name that is not UTF-8 is refused here.
        const std::string path = f.string();
        const std::size_t bad = util::utf8_invalid_at(path);
        if (bad != std::string::npos) {
            char byte[8];
            std::snprintf(byte, sizeof byte, "0x%02x", static_cast<unsigned char>(path[bad]));
            throw InputError(util::printable(path, 400) + ": file name is not valid UTF-8 (byte " + byte +
                             " at index " + std::to_string(bad) +
                             " of the path); sample ids and source files are UTF-8 text: rename it");
        }
    }
    return files;
}

std::filesystem::path model_config_beside(const std::vector<std::filesystem::path>& inputs) {
    if (inputs.empty()) return {};
    const auto& in = inputs.front();
    std::error_code ec;
    auto c = std::filesystem::is_directory(in, ec) ? in / "config.json" : in.parent_path() / "config.json";
    // A padded-batch folder takes the config inside it, else the one beside it.
    if (is_batch_folder(in) && !std::filesystem::is_regular_file(c, ec)) c = in.parent_path() / "config.json";
    if (c.parent_path().empty()) c = "config.json";
    if (in.filename() == "config.json" || !std::filesystem::is_regular_file(c, ec)) return {};
    return c;
}

namespace {

/// Whether `text` looks like a Hugging Face model config: a JSON object with num_hidden_layers and
/// an expert count (num_experts, num_local_experts or n_routed_experts). Anything else named
/// config.json beside the inputs (a web app's settings, a tokenizer's) is not the model's.
bool looks_like_model_config(const std::string& text) {
    const auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object() || !j.contains("num_hidden_layers")) return false;
    return j.contains("num_experts") || j.contains("num_local_experts") || j.contains("n_routed_experts");
}

/// The model from the config.json beside the inputs, for what the given model leaves open. The
/// fields given always win: a config that disagrees with them is named in a note and not used for
/// those fields. A config.json that does not look like a model config (looks_like_model_config) is
/// left alone, with a note when it would have been read.
ModelDescription model_with_config(const std::vector<std::filesystem::path>& inputs, const ModelDescription& given,
                                   std::vector<std::string>& notes) {
    const auto path = model_config_beside(inputs);
    if (path.empty()) return given;
    const bool complete =
        given.experts > 0 && given.top_k > 0 && given.num_hidden_layers > 0 && !given.moe_layers.empty();
    if (complete) return given; // nothing left open: the config beside the inputs is never read
    const std::string text = read_whole_file(path);
    if (!looks_like_model_config(text)) {
        notes.push_back(util::printable(path.string(), 400) +
                        " is not a model config (no num_hidden_layers and expert count): not used");
        return given;
    }
    ModelDescription c = model_from_hf_config(text, path.string());
    if (given.experts <= 0 && given.top_k <= 0 && given.moe_layers.empty() && given.num_hidden_layers <= 0) {
        notes.push_back("model from " + path.string() + " (" + std::to_string(c.num_moe_layers()) + " MoE layers of " +
                        std::to_string(c.num_hidden_layers) + ", " + std::to_string(c.experts) + " experts, top-" +
                        std::to_string(c.top_k) + ")");
        return c;
    }
    const std::string by = given.source.empty() ? std::string("flags") : given.source;
    auto differs = [&](const char* what, long long a, long long b) {
        if (a > 0 && a != b)
            notes.push_back("the model given (" + by + ") has " + what + " " + std::to_string(a) + " where " +
                            path.string() + " says " + std::to_string(b) + ": the model given is used");
    };
    differs("experts", given.experts, c.experts);
    differs("top-k", given.top_k, c.top_k);
    differs("num_hidden_layers", given.num_hidden_layers, c.num_hidden_layers);
    if (!given.moe_layers.empty() && given.moe_layers != c.moe_layers)
        notes.push_back("the model given (" + by + ") has MoE layers " + format_layer_list(given.moe_layers) +
                        " where " + path.string() + " says " + format_layer_list(c.moe_layers) +
                        ": the model given is used");
    // What the given description leaves open (e.g. --experts/--top-k alone) comes from the config,
    // as long as it agrees with what was given.
    ModelDescription m = given;
    const bool layers_agree = given.num_hidden_layers <= 0 || given.num_hidden_layers == c.num_hidden_layers;
    if (m.experts <= 0) m.experts = c.experts;
    if (m.top_k <= 0) m.top_k = c.top_k;
    if (m.num_hidden_layers <= 0) m.num_hidden_layers = c.num_hidden_layers;
    if (m.moe_layers.empty() && layers_agree) m.moe_layers = c.moe_layers;
    if (m.name.empty()) m.name = c.name;
    if (!(m == given)) notes.push_back("model completed from " + path.string());
    return m;
}

/// Fills a partial model description for the formats that describe their own layers.
ModelDescription resolve_model(const ModelDescription& given, TraceFormat format, const SourceFile& first) {
    ModelDescription m = given;
    if (is_load_only(format)) return m; // a load-only file describes itself
    if (m.experts <= 0 || m.top_k <= 0)
        throw InputError("no model description for " + first.path.string() + ": ",
                         Setting{"ask_model", "",
                                 "give the model (a shipped model's name, its config.json, or its expert count and "
                                 "top-k)"},
                         "");
    if (m.moe_layers.empty()) {
        m.moe_layers = detail::self_described_moe_layers(first, format);
        if (m.moe_layers.empty()) {
            if (m.num_hidden_layers <= 0)
                throw InputError(std::string("format ") + to_string(format) + " does not list its MoE layers: ",
                                 Setting{"ask_moe_layers", "", "give the MoE layer list or the decoder layer count"},
                                 "");
            // Check the sizes (num_hidden_layers, experts, top_k bounds) before allocating from them.
            ModelDescription probe = m;
            probe.moe_layers = {0};
            probe.validate();
            m.moe_layers.resize(static_cast<std::size_t>(m.num_hidden_layers));
            std::iota(m.moe_layers.begin(), m.moe_layers.end(), 0);
        }
    }
    if (m.num_hidden_layers <= 0 && format == TraceFormat::StepJson)
        m.num_hidden_layers = detail::step_json_hidden_layers(first); // dense keys after the last MoE layer count
    if (m.num_hidden_layers <= 0) {
        // Layer ids come bounded (<= kMaxLayerId) from the self-describing formats; stay
        // safe for any given list all the same.
        const std::int64_t n = static_cast<std::int64_t>(m.moe_layers.back()) + 1;
        m.num_hidden_layers = n > kMaxLayerId + 1 ? kMaxLayerId + 2 : static_cast<int>(n);
    }
    if (m.source.empty()) m.source = "flags";
    m.validate();
    return m;
}

void parse_file(TraceFormat format, const SourceFile& f, const ModelDescription& m, const detail::EmitFn& emit) {
    switch (format) {
    case TraceFormat::SGLang:
        return detail::parse_sglang(f, m, emit);
    case TraceFormat::VLLM:
        return detail::parse_vllm(f, m, emit);
    case TraceFormat::Npy:
        if (f.streamed && f.bytes.empty()) return detail::parse_npz(f, m, emit); // a padded-batch folder
        return detail::parse_npy_file(f, m, emit);
    case TraceFormat::Npz:
        return detail::parse_npz(f, m, emit);
    case TraceFormat::NestedJson:
        return detail::parse_nested_json(f, m, emit);
    case TraceFormat::NemoRL:
        return detail::parse_nemo_rl(f, m, emit);
    case TraceFormat::Megatron:
        return detail::parse_megatron(f, m, emit);
    case TraceFormat::StepJson:
        return detail::parse_step_json(f, m, emit);
    case TraceFormat::PromptCsv:
        return detail::parse_prompt_csv(f, m, emit);
    case TraceFormat::Aggregate:
    case TraceFormat::Loads:
    case TraceFormat::Auto:
        break;
    }
    throw std::logic_error("parse_file: no parser");
}

/// The fingerprint of a set of files: independent of their order (the same files named in another
/// order, or found in another folder walk, are the same import). One file: its own FNV-1a hash;
/// several: FNV-1a over their hashes sorted ascending (8 bytes each, little-endian).
std::uint64_t combine_file_hashes(std::vector<std::uint64_t> hashes) {
    if (hashes.size() == 1) return hashes.front();
    std::sort(hashes.begin(), hashes.end());
    std::uint64_t h = 0xcbf29ce484222325ULL;
    for (std::uint64_t x : hashes) {
        unsigned char b[8];
        for (int k = 0; k < 8; ++k)
            b[k] = static_cast<unsigned char>(x >> (8 * k));
        h = fnv1a64(b, sizeof b, h);
    }
    return h;
}

/// One input file on its way through the import pipeline: loaded, parsed (unless streamed), then
/// delivered; `error` holds what went wrong in an earlier stage, thrown in input order.
struct Token {
    std::size_t index = 0; ///< position in the input order
    SourceFile file;
    std::vector<SampleRecord> records;
    std::vector<std::string> notes;
    std::exception_ptr error;
};

/// Throws the format-mismatch error when `f` (not the first file) is detected as another format.
void check_same_format(const SourceFile& f, TraceFormat format, const std::filesystem::path& first) {
    const TraceFormat d = detect_format(f);
    if (d != format)
        throw InputError(f.path.string() + ": format " + to_string(d) + " differs from " + to_string(format) + " of " +
                         first.string() + "; import different formats as separate traces");
}

/// The exception being handled (call it inside a catch block) with the library exceptions a parser
/// lets escape turned into one InputError line naming the file `p`.
std::exception_ptr file_error(const std::filesystem::path& p) {
    try {
        throw;
    } catch (const nlohmann::json::exception& e) {
        return std::make_exception_ptr(InputError(p.string() + ": " + detail::json_error_description(e)));
    } catch (const std::filesystem::filesystem_error& e) {
        return std::make_exception_ptr(InputError(p.string() + ": " + e.code().message()));
    } catch (...) {
        return std::current_exception();
    }
}

/// The format of the first file (a non-empty one) as detected; InputError for a pickle or an
/// unrecognized file.
TraceFormat detect_first_format(const SourceFile& first) {
    const TraceFormat format = detect_format(first);
    if (format == TraceFormat::Auto) {
        if (static_cast<unsigned char>(first.bytes[0]) == 0x80)
            throw InputError(first.path.string() + ": " + detail::kPickleHint);
        throw InputError(first.path.string() + ": unrecognized trace format (",
                         Setting{"ask_format", "", "name the format"}, "; valid: " + format_names(false) + ")");
    }
    return format;
}

/// Imports the load-only file `first` (an aggregate or loads file, summary.format; the only one of
/// `file_count` inputs) into `sink`, filling `summary` and reporting one file done.
void import_aggregate(const SourceFile& first, std::size_t file_count, const ImportOptions& options, ImportSink& sink,
                      const ImportProgressFn& progress, ImportSummary& summary, ImportProgress& prog) {
    const bool loads = summary.format == TraceFormat::Loads;
    if (file_count != 1)
        throw InputError(std::string(loads ? "loads files" : "aggregate traces") +
                         " are imported one file at a time (got " + std::to_string(file_count) + " files)");
    AggregateCounts agg;
    try {
        const detail::NoteScope scope(summary.notes);
        agg = loads ? detail::parse_loads(first, options.model)
                    : detail::parse_aggregate(first, options.model, options.router_layer_base);
    } catch (...) {
        std::rethrow_exception(file_error(first.path));
    }
    summary.model = agg.model;
    if (first.streamed)
        throw InputError(first.path.string() + ": " + (loads ? "a loads file" : "an aggregate trace") +
                         " is a JSON file");
    summary.bytes = first.bytes.size();
    summary.fingerprint = fnv1a64(first.bytes.data(), first.bytes.size()); // = combined over one file
    summary.notes.emplace_back("load-only trace: per-layer expert totals, usable for placement views, not for packing");
    sink.begin(agg.model, summary.format);
    sink.aggregate(std::move(agg));
    prog.files_done = 1;
    prog.bytes_done = summary.bytes;
    if (progress) progress(prog);
}

/// The per-sample import of `files` in one format and model: a TBB pipeline that loads the files
/// in input order, parses them in parallel (a streamed input in the last stage) and hands their
/// samples to the sink in input order, checking that sample ids are unique across the files.
/// Fills the summary's samples, lengths, missing routes, bytes and notes, and the progress.
class ImportPipeline {
public:
    ImportPipeline(const std::vector<std::filesystem::path>& files, SourceFile&& first, TraceFormat format,
                   bool check_format, const ModelDescription& model, ImportSink& sink, const ImportProgressFn& progress,
                   const std::atomic<bool>* cancel, ImportSummary& summary, ImportProgress& prog)
        : files_(files), first_(std::move(first)), format_(format), check_format_(check_format), model_(model),
          sink_(sink), progress_(progress), cancel_(cancel), summary_(summary), prog_(prog), pool_(files.size()) {
        file_hashes_.reserve(files.size());
    }

    /// Runs the pipeline to its end, or until cancelled (then fewer files were read).
    void run() {
        // Tokens live in `pool_` so that nothing leaks when a stage throws and the pipeline is cancelled.
        const auto threads = static_cast<std::size_t>(std::max(1, tbb::info::default_concurrency()));
        tbb::parallel_pipeline(
            2 * threads,
            tbb::make_filter<void, Token*>(tbb::filter_mode::serial_in_order,
                                           [this](tbb::flow_control& fc) { return load(fc); }) &
                tbb::make_filter<Token*, Token*>(tbb::filter_mode::parallel, [this](Token* t) { return parse(t); }) &
                tbb::make_filter<Token*, void>(tbb::filter_mode::serial_in_order, [this](Token* t) { deliver(t); }));
    }

    bool cancelled() const { return cancel_ && cancel_->load(std::memory_order_relaxed); }
    /// Per file, in input order (a streamed file's own hash list).
    const std::vector<std::uint64_t>& file_hashes() const { return file_hashes_; }
    /// Sum of the accepted samples' lengths t_i.
    std::int64_t length_sum() const { return length_sum_; }

private:
    /// First stage: the next file, loaded (a load error kept in the token).
    Token* load(tbb::flow_control& fc) {
        if (next_ >= files_.size() || cancelled()) {
            fc.stop();
            return nullptr;
        }
        pool_[next_] = std::make_unique<Token>();
        Token* t = pool_[next_].get();
        t->index = next_;
        try {
            t->file = next_ == 0 ? std::move(first_) : load_source(files_[next_]);
        } catch (...) {
            t->error = file_error(files_[next_]);
        }
        ++next_;
        return t;
    }

    /// Second stage (parallel): a file read whole, parsed into the token's records.
    Token* parse(Token* t) const {
        if (t->error || t->file.streamed) return t; // a streamed input is parsed by the last stage
        try {
            if (t->file.bytes.empty()) throw InputError(t->file.path.string() + ": empty file");
            if (check_format_) check_same_format(t->file, format_, files_.front());
            const detail::NoteScope notes(t->notes);
            parse_file(format_, t->file, model_, [&](SampleRecord&& r) { t->records.push_back(std::move(r)); });
            if (t->records.empty()) throw InputError(t->file.path.string() + ": no samples");
        } catch (...) {
            t->error = file_error(t->file.path);
        }
        return t;
    }

    /// Last stage: the token's samples to the sink, in input order; the token is released.
    void deliver(Token* t) {
        struct Release {
            std::unique_ptr<Token>& slot;
            ~Release() { slot.reset(); }
        } release{pool_[t->index]};
        if (t->error) std::rethrow_exception(t->error);
        if (cancelled()) return;
        if (t->file.streamed) {
            deliver_streamed(t);
        } else {
            file_hashes_.push_back(fnv1a64(t->file.bytes.data(), t->file.bytes.size()));
            for (auto& r : t->records)
                accept(std::move(r));
        }
        for (auto& n : t->notes)
            summary_.notes.push_back(std::move(n));
        summary_.bytes += t->file.byte_count();
        prog_.files_done = t->index + 1;
        prog_.bytes_done = summary_.bytes;
        prog_.samples = summary_.samples;
        prog_.current_file = t->file.path.string();
        if (progress_) progress_(prog_);
    }

    /// A streamed input parsed here, each sample handed to the sink as it is read (a batch file's
    /// samples are never held together), while another thread hashes the file.
    void deliver_streamed(Token* t) {
        std::vector<std::uint64_t> hashes;
        std::size_t emitted = 0;
        try {
            if (check_format_) check_same_format(t->file, format_, files_.front());
            tbb::parallel_invoke([&] { hashes = streamed_hashes(t->file); },
                                 [&] {
                                     const detail::NoteScope notes(t->notes);
                                     parse_file(format_, t->file, model_, [&](SampleRecord&& r) {
                                         if (cancelled()) throw Cancelled();
                                         ++emitted;
                                         accept(std::move(r));
                                         // A batch file takes long: progress per sample.
                                         prog_.samples = summary_.samples;
                                         prog_.current_file = t->file.path.string();
                                         if (progress_) progress_(prog_);
                                     });
                                 });
            if (emitted == 0) throw InputError(t->file.path.string() + ": no samples");
        } catch (...) {
            std::rethrow_exception(file_error(t->file.path));
        }
        file_hashes_.insert(file_hashes_.end(), hashes.begin(), hashes.end());
    }

    /// One sample to the sink; InputError for an id seen before (in any file).
    void accept(SampleRecord&& r) {
        auto [it, fresh] = id_to_file_.emplace(r.info.id, r.info.source_file);
        if (!fresh)
            throw InputError(r.info.source_file + ": duplicate sample id '" + detail::printable(r.info.id) +
                             "' (first seen in " + it->second + ")");
        if (summary_.samples == 0 || r.info.length < summary_.min_length) summary_.min_length = r.info.length;
        summary_.max_length = std::max(summary_.max_length, r.info.length);
        length_sum_ += r.info.length;
        summary_.missing_routes += r.info.missing_routes;
        ++summary_.samples;
        sink_.sample(std::move(r));
    }

    const std::vector<std::filesystem::path>& files_;
    SourceFile first_;
    const TraceFormat format_;
    const bool check_format_; ///< every file detected again and compared with the first's format
    const ModelDescription& model_;
    ImportSink& sink_;
    const ImportProgressFn& progress_;
    const std::atomic<bool>* cancel_;
    ImportSummary& summary_;
    ImportProgress& prog_;
    std::vector<std::unique_ptr<Token>> pool_;
    std::size_t next_ = 0;
    std::unordered_map<std::string, std::string> id_to_file_;
    std::vector<std::uint64_t> file_hashes_;
    std::int64_t length_sum_ = 0;
};

} // namespace

ImportSummary import_trace(const std::vector<std::filesystem::path>& inputs, const ImportOptions& options,
                           ImportSink& sink, const ImportProgressFn& progress, const std::atomic<bool>* cancel) {
    const auto files = collect_trace_files(inputs);
    ImportSummary summary;
    summary.files = files.size();
    ImportProgress prog;
    prog.files_total = files.size();
    for (const auto& p : files)
        prog.bytes_total += trace_input_bytes(p);

    // The first file fixes the format (and, for self-describing formats, the MoE layer list).
    SourceFile first = load_source(files.front());
    if (first.byte_count() == 0) throw InputError(first.path.string() + ": empty file");
    const TraceFormat format = options.format == TraceFormat::Auto ? detect_first_format(first) : options.format;
    summary.format = format;
    if (is_load_only(format)) {
        import_aggregate(first, files.size(), options, sink, progress, summary, prog);
        return summary;
    }

    const ModelDescription model =
        resolve_model(model_with_config(inputs, options.model, summary.notes), format, first);
    summary.model = model;
    sink.begin(model, format);

    ImportPipeline pipeline(files, std::move(first), format, options.format == TraceFormat::Auto, model, sink, progress,
                            cancel, summary, prog);
    pipeline.run();
    if (pipeline.cancelled()) throw Cancelled();
    summary.fingerprint = combine_file_hashes(pipeline.file_hashes());
    summary.mean_length = summary.samples ? static_cast<double>(pipeline.length_sum()) / summary.samples : 0.0;
    if (summary.missing_routes > 0)
        summary.notes.push_back(std::to_string(summary.missing_routes) +
                                " route slots held the format's missing-route marker and were counted as nothing");
    return summary;
}

Trace import_trace_to_memory(const std::vector<std::filesystem::path>& inputs, const ImportOptions& options,
                             ImportSummary* summary) {
    struct MemorySink : ImportSink {
        Trace trace;
        void begin(const ModelDescription& m, TraceFormat f) override {
            trace.model = m;
            trace.format = to_string(f);
        }
        void sample(SampleRecord&& r) override { trace.append(std::move(r)); }
        std::string what;
        void aggregate(AggregateCounts&&) override {
            throw InputError(what + ": aggregate traces hold per-layer totals only: usable for placement (routepack "
                                    "place), not for packing");
        }
    } sink;
    sink.what = inputs.size() == 1 ? inputs.front().string() : "the inputs";
    ImportSummary s = import_trace(inputs, options, sink);
    if (summary) *summary = s;
    return std::move(sink.trace);
}

std::vector<std::uint64_t> import_expert_loads(const std::vector<std::filesystem::path>& inputs,
                                               const ImportOptions& options, ModelDescription* model,
                                               ImportSummary* summary) {
    struct LoadSink : ImportSink {
        ModelDescription model;
        std::vector<std::uint64_t> loads;
        void begin(const ModelDescription& m, TraceFormat /*format*/) override {
            model = m;
            loads.assign(static_cast<std::size_t>(m.num_moe_layers()) * static_cast<std::size_t>(m.experts), 0);
        }
        void sample(SampleRecord&& r) override {
            if (r.counts.size() != loads.size())
                throw InputError("sample '" + r.info.id + "' holds " + std::to_string(r.counts.size()) +
                                 " counts, expected L x E = " + std::to_string(loads.size()));
            for (std::size_t k = 0; k < loads.size(); ++k)
                loads[k] += r.counts[k];
        }
        void aggregate(AggregateCounts&& a) override {
            model = a.model;
            if (loads.size() != a.totals.size()) loads.assign(a.totals.size(), 0);
            for (std::size_t k = 0; k < loads.size(); ++k)
                loads[k] += a.totals[k];
        }
    } sink;
    ImportSummary done = import_trace(inputs, options, sink);
    if (model) *model = sink.model;
    if (summary) *summary = std::move(done);
    return std::move(sink.loads);
}

} // namespace routepack
