#include "gpu/rewrite.h"

#include "core/util/errors.h"
#include "core/util/json.h"
#include "core/util/input_file.h"
#include "core/model/trace.h"
#include "gpu/checkpoint_scheme.h"
#include "gpu/rewrite_cuda.h"
#include "gpu/safetensors.h"

#include <nlohmann/json.hpp>
#include <tbb/global_control.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <set>
#include <signal.h>
#include <sstream>
#include <sys/statvfs.h>
#include <sys/types.h>
#include <unistd.h>

namespace routepack::gpu {
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

constexpr std::uint64_t kPiece = 8ull << 20;    ///< largest single copy (bytes)
constexpr std::uint64_t kBatch = 256ull << 20;  ///< bytes between progress reports / cancel checks
/// Shards are mapped, not read whole: only the regular-file check applies.
constexpr InputFileKind kShard{"safetensors shard", ~std::uint64_t(0)};

std::string read_text(const fs::path& p, const InputFileKind& kind) {
    return read_input_file(p, kind);
}

std::string fmt_bytes(std::uint64_t b) {
    char buf[64];
    if (b >= 1000000000ull) std::snprintf(buf, sizeof buf, "%.2f GB", static_cast<double>(b) / 1e9);
    else if (b >= 1000000ull) std::snprintf(buf, sizeof buf, "%.1f MB", static_cast<double>(b) / 1e6);
    else std::snprintf(buf, sizeof buf, "%llu bytes", static_cast<unsigned long long>(b));
    return buf;
}

/// Parses a non-negative or signed decimal integer; InputError naming --layer-map otherwise.
int parse_int(const std::string& s, const std::string& item) {
    const std::size_t i = (!s.empty() && (s[0] == '+' || s[0] == '-')) ? 1 : 0;
    if (s.size() == i || s.size() - i > 9) throw InputError("--layer-map: '" + item + "': expected a layer id");
    for (std::size_t k = i; k < s.size(); ++k)
        if (s[k] < '0' || s[k] > '9') throw InputError("--layer-map: '" + item + "': expected a layer id");
    return std::stoi(s);
}

std::string join_layers(const std::vector<int>& v) { return v.empty() ? std::string("none") : format_layer_list(v); }

/// Replaces the expert index in `experts.{e}.` (last occurrence) with `*`: the family of a per-expert tensor.
std::string family_key(const std::string& name, int expert) {
    const std::string needle = "experts." + std::to_string(expert) + ".";
    const std::size_t pos = name.rfind(needle);
    if (pos == std::string::npos) return name;  // cannot happen for classified names
    return name.substr(0, pos) + "experts.*." + name.substr(pos + needle.size());
}

std::string shape_text(const std::vector<std::uint64_t>& s) {
    std::string t = "[";
    for (std::size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
    return t + "]";
}

/// Absolute, normalised, without a trailing separator ("out/" names the folder "out").
fs::path output_path(const fs::path& p) {
    fs::path o = fs::absolute(p).lexically_normal();
    while (o.has_relative_path() && o.filename().empty()) o = o.parent_path();
    return o;
}

/// Marker file inside a temporary output folder: only folders holding it are ever removed as stale.
constexpr const char* kPartialMarker = ".routepack-partial";

bool pid_alive(long pid) { return pid > 0 && (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM); }

struct Fd {
    int fd = -1;
    Fd() = default;
    explicit Fd(int f) : fd(f) {}
    Fd(Fd&& o) noexcept : fd(o.fd) { o.fd = -1; }
    Fd& operator=(Fd&& o) noexcept {
        if (this != &o) {
            if (fd >= 0) ::close(fd);
            fd = o.fd;
            o.fd = -1;
        }
        return *this;
    }
    ~Fd() {
        if (fd >= 0) ::close(fd);
    }
};

Fd open_read(const fs::path& p) {
    int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw InputError(p.string() + ": cannot open: " + std::strerror(errno));
    return Fd(fd);
}

void pread_all(int fd, void* buf, std::uint64_t len, std::uint64_t off, const fs::path& p) {
    auto* b = static_cast<char*>(buf);
    while (len > 0) {
        const ssize_t n = ::pread(fd, b, len, static_cast<off_t>(off));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) throw InputError(p.string() + ": read failed at offset " + std::to_string(off) + ": " +
                                     (n == 0 ? std::string("unexpected end of file") : std::strerror(errno)));
        b += n;
        off += static_cast<std::uint64_t>(n);
        len -= static_cast<std::uint64_t>(n);
    }
}

void pwrite_all(int fd, const void* buf, std::uint64_t len, std::uint64_t off, const fs::path& p) {
    const auto* b = static_cast<const char*>(buf);
    while (len > 0) {
        const ssize_t n = ::pwrite(fd, b, len, static_cast<off_t>(off));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) throw InputError(p.string() + ": write failed at offset " + std::to_string(off) + ": " +
                                     std::strerror(n == 0 ? EIO : errno));
        b += n;
        off += static_cast<std::uint64_t>(n);
        len -= static_cast<std::uint64_t>(n);
    }
}

/// A piece of a segment, at most kPiece bytes.
struct Piece {
    std::uint64_t dst, src, len;
    int src_file;
};

std::vector<Piece> split_pieces(const OutputFile& f) {
    std::vector<Piece> out;
    for (const CopySegment& s : f.segments)
        for (std::uint64_t o = 0; o < s.len; o += kPiece)
            out.push_back({s.dst + o, s.src + o, std::min(kPiece, s.len - o), s.src_file});
    return out;
}

/// Runs `fn(piece)` over the pieces in batches of about kBatch bytes, in parallel within a batch;
/// reports progress and checks `cancel` between batches.
template <class Fn>
void for_pieces(const std::vector<Piece>& pieces, int workers, const std::string& stage, std::uint64_t& done,
                std::uint64_t total, const RewriteProgressFn& progress, const std::atomic<bool>* cancel, Fn&& fn) {
    tbb::task_arena arena(workers > 0 ? workers : tbb::task_arena::automatic);
    std::size_t i = 0;
    while (i < pieces.size()) {
        if (cancel && cancel->load()) throw InputError("cancelled");
        std::size_t j = i;
        std::uint64_t bytes = 0;
        while (j < pieces.size() && (j == i || bytes + pieces[j].len <= kBatch)) bytes += pieces[j++].len;
        arena.execute([&] {
            tbb::parallel_for(tbb::blocked_range<std::size_t>(i, j, 1), [&](const tbb::blocked_range<std::size_t>& r) {
                for (std::size_t k = r.begin(); k != r.end(); ++k) {
                    if (cancel && cancel->load(std::memory_order_relaxed)) return;
                    fn(pieces[k]);
                }
            });
        });
        if (cancel && cancel->load()) throw InputError("cancelled");
        done += bytes;
        if (progress) progress(stage, done, total);
        i = j;
    }
}

std::atomic<bool> g_copy_range_ok{true};

/// Copies one piece: copy_file_range (in-kernel) when the file systems allow it, else pread + pwrite.
void copy_piece(int in, int out, const Piece& p, const fs::path& in_path, const fs::path& out_path) {
    std::uint64_t done = 0;
    if (g_copy_range_ok.load(std::memory_order_relaxed)) {
        while (done < p.len) {
            off_t ioff = static_cast<off_t>(p.src + done), ooff = static_cast<off_t>(p.dst + done);
            const ssize_t n = ::copy_file_range(in, &ioff, out, &ooff, p.len - done, 0);
            if (n > 0) {
                done += static_cast<std::uint64_t>(n);
                continue;
            }
            if (n < 0 && errno == EINTR) continue;
            if (n < 0 && (errno == EXDEV || errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP ||
                          errno == EBADF)) {
                g_copy_range_ok.store(false);
                break;
            }
            if (n == 0) throw InputError(in_path.string() + ": unexpected end of file at offset " +
                                         std::to_string(p.src + done));
            throw InputError(out_path.string() + ": write failed: " + std::strerror(errno));
        }
    }
    if (done == p.len) return;
    thread_local std::vector<char> buf;
    buf.resize(kPiece);
    while (done < p.len) {
        const std::uint64_t n = std::min<std::uint64_t>(kPiece, p.len - done);
        pread_all(in, buf.data(), n, p.src + done, in_path);
        pwrite_all(out, buf.data(), n, p.dst + done, out_path);
        done += n;
    }
}

/// Parsed provenance sidecar of an input folder, if any.
struct InputSidecar {
    std::string order;  ///< "physical" | "logical"
    std::string placement_fingerprint;
    bool permute_router = false;
    std::string plan_origin;
};

std::optional<InputSidecar> read_input_sidecar(const fs::path& dir) {
    const fs::path p = dir / kRewriteSidecar;
    std::error_code ec;
    if (!fs::exists(fs::symlink_status(p, ec))) return std::nullopt;
    if (!fs::is_regular_file(p, ec)) throw InputError(p.string() + ": not a file");
    try {
        const json j = util::parse_json_strict(read_text(p, input_files::kRewriteSidecar), p.string());
        InputSidecar s;
        s.order = j.at("output_order").get<std::string>();
        if (s.order != "physical" && s.order != "logical")
            throw InputError(p.string() + ": output_order must be \"physical\" or \"logical\", not " + j["output_order"].dump());
        s.placement_fingerprint = j.at("plan").at("placement_fingerprint").get<std::string>();
        s.permute_router = j.at("permute_router").get<bool>();
        s.plan_origin = j.at("plan").value("origin", std::string());
        return s;
    } catch (const json::parse_error& e) {
        throw InputError(p.string() + ": not a routepack rewrite sidecar: malformed JSON at byte " + std::to_string(e.byte));
    } catch (const json::exception&) {
        throw InputError(p.string() + ": not a routepack rewrite sidecar (needs output_order, permute_router, "
                                      "plan.placement_fingerprint)");
    }
}

}  // namespace

RewriteDevice parse_rewrite_device(const std::string& name) {
    if (name == "auto") return RewriteDevice::Auto;
    if (name == "cpu") return RewriteDevice::Cpu;
    if (name == "cuda") return RewriteDevice::Cuda;
    throw InputError("--device: unknown device '" + name + "' (valid: auto, cpu, cuda)");
}

std::map<int, int> parse_layer_map(const std::string& text, const std::vector<int>& plan_layers) {
    std::map<int, int> m;
    if (text.empty()) throw InputError("--layer-map: empty");
    if (text.back() == ',') throw InputError("--layer-map: empty item in '" + text + "'");
    std::stringstream ss(text);
    std::string item;
    auto put = [&](int p, long long c, const std::string& it) {
        if (c < 0) throw InputError("--layer-map: '" + it + "': checkpoint layer " + std::to_string(c) + " is negative");
        if (c > 999999999) throw InputError("--layer-map: '" + it + "': checkpoint layer " + std::to_string(c) + " is too large");
        if (!m.emplace(p, static_cast<int>(c)).second)
            throw InputError("--layer-map: plan layer " + std::to_string(p) + " is mapped twice");
    };
    while (std::getline(ss, item, ',')) {
        if (item.empty()) throw InputError("--layer-map: empty item in '" + text + "'");
        if ((item[0] == '+' || item[0] == '-') && item.find(':') == std::string::npos) {
            const int shift = parse_int(item, item);
            for (int p : plan_layers) put(p, static_cast<long long>(p) + shift, item);
            continue;
        }
        const std::size_t colon = item.find(':');
        if (colon == std::string::npos)
            throw InputError("--layer-map: '" + item + "': expected P:C, P-Q:C or a shift +N / -N");
        const std::string lhs = item.substr(0, colon), rhs = item.substr(colon + 1);
        const int c = parse_int(rhs, item);
        const std::size_t dash = lhs.find('-', 1);
        if (dash == std::string::npos) {
            put(parse_int(lhs, item), c, item);
        } else {
            const int a = parse_int(lhs.substr(0, dash), item), b = parse_int(lhs.substr(dash + 1), item);
            if (a < 0 || b < a) throw InputError("--layer-map: '" + item + "': range must be ascending");
            // Only the plan's MoE layers inside the range get an entry (a range never allocates per id).
            for (int p : plan_layers)
                if (p >= a && p <= b) put(p, static_cast<long long>(c) + (p - a), item);
        }
    }
    for (const auto& [p, c] : m)
        if (std::find(plan_layers.begin(), plan_layers.end(), p) == plan_layers.end())
            throw InputError("--layer-map: plan layer " + std::to_string(p) + " is not a MoE layer of the plan (" +
                             join_layers(plan_layers) + ")");
    std::set<int> targets;
    for (const auto& [p, c] : m)
        if (!targets.insert(c).second)
            throw InputError("--layer-map: checkpoint layer " + std::to_string(c) + " is the target of two plan layers");
    return m;
}

RewritePlan plan_rewrite(const RewriteRequest& req) {
    RewritePlan plan;
    std::error_code ec;
    if (req.input.empty()) throw InputError("--input: missing");
    if (req.output.empty()) throw InputError("--output: missing");
    if (!fs::exists(req.input, ec)) throw InputError(req.input.string() + ": no such file or folder");
    const fs::path input = fs::canonical(req.input);
    const bool input_is_dir = fs::is_directory(input);
    const fs::path input_dir = input_is_dir ? input : input.parent_path();

    // --- output location -------------------------------------------------------------------------
    if (req.workers < 0 || req.workers > 1024)
        throw InputError("--workers: expected 0 (all cores) to 1024, got " + std::to_string(req.workers));
    const fs::path output = output_path(req.output);
    if (fs::is_symlink(output, ec))
        throw InputError(req.output.string() + ": output is a symbolic link; name a folder to create");
    {
        fs::path out_canon = fs::weakly_canonical(output);
        if (out_canon == input || out_canon == input_dir)
            throw InputError(req.output.string() + ": output is the input; the rewrite never overwrites its input");
        const std::string ic = input_dir.string() + "/", oc = out_canon.string() + "/";
        if (input_is_dir && oc.compare(0, ic.size(), ic) == 0)
            throw InputError(req.output.string() + ": output lies inside the input folder " + input_dir.string());
        if (fs::exists(output, ec)) {
            if (!fs::is_directory(output, ec) || !fs::is_empty(output, ec))
                throw InputError(req.output.string() + ": output exists and is not an empty folder");
        }
        if (!fs::is_directory(output.parent_path(), ec))
            throw InputError(output.parent_path().string() + ": no such folder (for --output)");
    }

    // --- source files --------------------------------------------------------------------------------
    std::optional<CheckpointIndex> index;
    if (input_is_dir) {
        if (fs::exists(input / "model.safetensors.index.json")) {
            index = read_index(input);
            for (const std::string& s : index->shards()) {
                if (!fs::exists(input / s, ec))
                    throw InputError((input / "model.safetensors.index.json").string() + ": weight_map names shard " +
                                     s + ", which is missing");
                check_input_file(input / s, kShard);
                plan.sources.push_back(input / s);
            }
        } else {
            for (const auto& de : fs::directory_iterator(input))
                if (de.is_regular_file() && de.path().extension() == ".safetensors") plan.sources.push_back(de.path());
            std::sort(plan.sources.begin(), plan.sources.end());
        }
        if (plan.sources.empty()) throw InputError(input.string() + ": no .safetensors files in the folder");
        std::set<fs::path> srcset(plan.sources.begin(), plan.sources.end());
        auto check_kind = [](const fs::path& p) {
            const fs::file_status st = fs::symlink_status(p);
            if (!fs::is_regular_file(st) && !fs::is_directory(st) && !fs::is_symlink(st))
                throw InputError(p.string() + ": not a regular file, folder or symbolic link; the rewrite copies only those");
        };
        for (const auto& de : fs::directory_iterator(input)) {
            if (srcset.count(de.path()) || de.path().filename() == kRewriteSidecar) continue;
            check_kind(de.path());
            if (fs::is_directory(fs::symlink_status(de.path())))
                for (const auto& sub : fs::recursive_directory_iterator(de.path())) check_kind(sub.path());
            plan.other_files.push_back(de.path());
        }
        std::sort(plan.other_files.begin(), plan.other_files.end());
    } else {
        if (input.extension() != ".safetensors")
            throw InputError(input.string() + ": expected a checkpoint folder or a .safetensors file");
        plan.sources.push_back(input);
    }

    std::vector<SafetensorsFile> files;
    files.reserve(plan.sources.size());
    for (const fs::path& p : plan.sources) files.push_back(SafetensorsFile::open(p));

    // Every tensor once; the index (when present) agrees with the shards.
    std::map<std::string, std::pair<int, const TensorInfo*>> where;
    std::vector<std::pair<std::string, std::vector<std::int64_t>>> names_and_shapes;
    for (std::size_t f = 0; f < files.size(); ++f) {
        for (const TensorInfo& t : files[f].tensors()) {
            auto [it, fresh] = where.emplace(t.name, std::make_pair(static_cast<int>(f), &t));
            if (!fresh)
                throw InputError(plan.sources[f].string() + ": tensor " + t.name + " is also in " +
                                 plan.sources[static_cast<std::size_t>(it->second.first)].filename().string());
            std::vector<std::int64_t> shape(t.shape.begin(), t.shape.end());
            names_and_shapes.emplace_back(t.name, std::move(shape));
        }
    }
    if (index) {
        const std::string ip = (input / "model.safetensors.index.json").string();
        for (const auto& [name, shard] : index->weight_map) {
            auto it = where.find(name);
            if (it == where.end()) throw InputError(ip + ": weight_map names tensor " + name + ", which is in no shard");
            if (plan.sources[static_cast<std::size_t>(it->second.first)].filename() != shard)
                throw InputError(ip + ": weight_map puts " + name + " in " + shard + ", but it is in " +
                                 plan.sources[static_cast<std::size_t>(it->second.first)].filename().string());
        }
        for (const auto& [name, loc] : where)
            if (!index->weight_map.count(name))
                throw InputError(ip + ": tensor " + name + " of " +
                                 plan.sources[static_cast<std::size_t>(loc.first)].filename().string() +
                                 " is missing from weight_map");
    }

    // --- model, scheme, layers --------------------------------------------------------------------
    const fs::path config = input_dir / "config.json";
    ModelDescription model;
    int n_group = 1;
    std::string model_origin;
    if (fs::is_regular_file(config, ec)) {
        const std::string text = read_text(config, input_files::kModelConfig);
        model = model_from_hf_config(text, config.string());
        try {
            const json j = json::parse(text);
            if (j.contains("n_group") && !j["n_group"].is_null()) {
                const json& g = j["n_group"];
                if (!g.is_number_integer() || g.get<std::int64_t>() < 1 || g.get<std::int64_t>() > (1 << 20))
                    throw InputError(config.string() + ": n_group: expected a positive integer, got " + g.dump());
                n_group = g.get<int>();
            }
        } catch (const json::exception&) {
            // model_from_hf_config already refused malformed JSON
        }
        model_origin = config.string();
    } else if (req.permute_router) {
        throw InputError("--permute-router: no config.json beside " + input.string() +
                         "; it is needed to check group-limited routing (n_group) before router rows move");
    }
    const Placement& pi = req.placement;
    const int E = pi.experts;
    if (pi.layers != static_cast<int>(req.plan_layers.size()) || E <= 0 ||
        pi.slot.size() != static_cast<std::size_t>(pi.layers) * static_cast<std::size_t>(E))
        throw InputError(req.plan_origin + ": placement has " + std::to_string(pi.layers) + " rows for " +
                         std::to_string(req.plan_layers.size()) + " MoE layers");
    plan.layer_map = req.layer_map;
    if (plan.layer_map.empty())
        for (int l : req.plan_layers) plan.layer_map[l] = l;
    for (const auto& [p, c] : plan.layer_map)
        if (std::find(req.plan_layers.begin(), req.plan_layers.end(), p) == req.plan_layers.end())
            throw InputError("--layer-map: plan layer " + std::to_string(p) + " is not a MoE layer of the plan (" +
                             join_layers(req.plan_layers) + ")");
    if (model_origin.empty()) {
        // No config.json: the checkpoint has the plan's experts at the mapped layers.
        model = req.plan_model;
        model.moe_layers.clear();
        for (const auto& [p, c] : plan.layer_map) model.moe_layers.push_back(c);
        std::sort(model.moe_layers.begin(), model.moe_layers.end());
        model.num_hidden_layers = std::max(model.num_hidden_layers, model.moe_layers.back() + 1);
        model.experts = E;
        model_origin = "the plan's model (no config.json beside the checkpoint)";
    }
    if (model.experts != E)
        throw InputError(req.plan_origin + ": plan has " + std::to_string(E) + " experts per MoE layer, the checkpoint (" +
                         model_origin + ") has " + std::to_string(model.experts));
    SchemeReport rep;
    try {
        rep = classify_checkpoint(names_and_shapes, model);
    } catch (const InputError& e) {
        throw InputError(std::string(e.what()) + " (MoE layers " + join_layers(model.moe_layers) + " from " + model_origin +
                         (req.layer_map.empty() ? std::string() : " and --layer-map") + ")");
    }
    plan.scheme = rep.scheme;
    plan.experts = E;
    plan.checkpoint_layers = rep.moe_layers;
    const std::set<int> ck_layers(rep.moe_layers.begin(), rep.moe_layers.end());
    std::map<int, int> row_of_ck;  // checkpoint layer -> placement row
    for (std::size_t r = 0; r < req.plan_layers.size(); ++r) {
        const int p = req.plan_layers[r];
        auto it = plan.layer_map.find(p);
        if (it == plan.layer_map.end()) continue;  // not in this checkpoint (explicit layer map)
        if (!ck_layers.count(it->second))
            throw InputError(req.plan_origin + ": plan layer " + std::to_string(p) +
                             (it->second != p ? " (checkpoint layer " + std::to_string(it->second) + ")" : std::string()) +
                             " is not a MoE layer of the checkpoint (MoE layers " + join_layers(rep.moe_layers) +
                             ")" + (req.layer_map.empty() ? "; use --layer-map" : ""));
        row_of_ck[it->second] = static_cast<int>(r);
    }
    for (int c : rep.moe_layers)
        if (!row_of_ck.count(c)) {
            std::vector<int> covered;
            for (const auto& [pc, r] : row_of_ck) covered.push_back(pc);
            throw InputError(input.string() + ": checkpoint MoE layer " + std::to_string(c) +
                             " has no placement row in the plan (plan MoE layers " + join_layers(req.plan_layers) + ")" +
                             (req.layer_map.empty() ? std::string("; use --layer-map")
                                                    : "; --layer-map covers checkpoint layers " + join_layers(covered)));
        }
    if (req.permute_router) {
        std::set<int> with_router;
        for (const TensorClass& tc : rep.tensors)
            if (tc.role == TensorRole::Router) with_router.insert(tc.layer);
        for (int c : rep.moe_layers)
            if (!with_router.count(c))
                throw InputError("--permute-router: checkpoint MoE layer " + std::to_string(c) +
                                 " has no router tensor with " + std::to_string(E) +
                                 " rows (mlp.gate.weight, block_sparse_moe.gate.weight or mlp.router.weight); "
                                 "a self-contained export needs it");
    }

    // --- index maps ---------------------------------------------------------------------------------
    std::vector<std::uint64_t> fp_words;
    for (const auto& [c, r] : row_of_ck) {
        std::vector<int> p2l(static_cast<std::size_t>(E), -1), src(static_cast<std::size_t>(E));
        for (int e = 0; e < E; ++e) {
            const int v = pi.at(r, e);
            if (v < 0 || v >= E || p2l[static_cast<std::size_t>(v)] != -1)
                throw InputError(req.plan_origin + ": placement of plan layer " + std::to_string(req.plan_layers[r]) +
                                 " is not a permutation of 0.." + std::to_string(E - 1));
            p2l[static_cast<std::size_t>(v)] = e;
        }
        for (int d = 0; d < E; ++d)
            src[static_cast<std::size_t>(d)] =
                req.direction == RewriteDirection::Apply ? p2l[static_cast<std::size_t>(d)] : pi.at(r, d);
        fp_words.push_back(static_cast<std::uint64_t>(c));
        for (int v : p2l) fp_words.push_back(static_cast<std::uint64_t>(v));
        if (req.permute_router && n_group > 1) {
            if (E % n_group != 0)
                throw InputError(model_origin + ": n_group " + std::to_string(n_group) + " does not divide experts " +
                                 std::to_string(E));
            const int gs = E / n_group;
            for (int g = 0; g < n_group; ++g) {
                const int h = pi.at(r, g * gs) / gs;
                for (int e = g * gs; e < (g + 1) * gs; ++e)
                    if (pi.at(r, e) / gs != h)
                        throw InputError(
                            "--permute-router: layer " + std::to_string(c) + ": the placement splits expert group " +
                            std::to_string(g) + " (experts " + std::to_string(g * gs) + "-" +
                            std::to_string((g + 1) * gs - 1) + ") across slot groups " + std::to_string(h) + " and " +
                            std::to_string(pi.at(r, e) / gs) + "; the model routes group-limited (n_group " +
                            std::to_string(n_group) + "), so permuting the router would change its output. Use a "
                            "placement that keeps each group's experts together, or rewrite without --permute-router");
            }
        }
        plan.source_index[c] = std::move(src);
    }
    plan.placement_fingerprint = hex64(fnv1a64(fp_words.data(), fp_words.size() * sizeof(std::uint64_t)));
    {
        std::uint64_t h = 0xcbf29ce484222325ULL;
        for (std::size_t f = 0; f < files.size(); ++f) {
            const std::string name = plan.sources[f].filename().string();
            const std::uint64_t size = files[f].file_size();
            std::string header(static_cast<std::size_t>(8 + files[f].header_size()), '\0');
            Fd fd = open_read(plan.sources[f]);
            pread_all(fd.fd, header.data(), header.size(), 0, plan.sources[f]);
            h = fnv1a64(name.data(), name.size(), h);
            h = fnv1a64(&size, sizeof size, h);
            h = fnv1a64(header.data(), header.size(), h);
        }
        plan.source_fingerprint = hex64(h);
    }

    // --- input sidecar: refuse rewriting twice / inverting with another placement -----------------
    {
        if (auto sc = read_input_sidecar(input_dir)) {
            if (req.direction == RewriteDirection::Apply && sc->order == "physical")
                throw InputError(input.string() + ": already in physical order (" + std::string(kRewriteSidecar) +
                                 ": placement " + sc->placement_fingerprint +
                                 "); invert it first (--inverse with that plan)");
            if (req.direction == RewriteDirection::Inverse) {
                if (sc->order == "logical")
                    throw InputError(input.string() + ": already in logical order (" + std::string(kRewriteSidecar) +
                                     "); nothing to invert");
                if (sc->placement_fingerprint != plan.placement_fingerprint)
                    throw InputError(input.string() + ": was rewritten with placement " + sc->placement_fingerprint +
                                     (sc->plan_origin.empty() ? std::string() : " (" + sc->plan_origin + ")") +
                                     ", not this plan's " + plan.placement_fingerprint);
                if (sc->permute_router != req.permute_router)
                    throw InputError(input.string() + std::string(": was rewritten ") +
                                     (sc->permute_router ? "with" : "without") +
                                     " --permute-router; invert it the same way");
            }
        }
    }

    // --- copy lists -------------------------------------------------------------------------------------
    struct Member {
        int file;
        const TensorInfo* t;
    };
    std::map<std::pair<int, std::string>, std::vector<Member>> families;  // (layer, family) -> [E]
    std::map<std::string, const TensorClass*> cls;
    for (const TensorClass& tc : rep.tensors) cls[tc.name] = &tc;
    for (const TensorClass& tc : rep.tensors) {
        if (tc.role != TensorRole::ExpertPerTensor) continue;
        auto& fam = families[{tc.layer, family_key(tc.name, tc.expert)}];
        if (fam.empty()) fam.assign(static_cast<std::size_t>(E), Member{-1, nullptr});
        const auto& w = where.at(tc.name);
        fam[static_cast<std::size_t>(tc.expert)] = Member{w.first, w.second};
    }
    for (const auto& [key, fam] : families) {
        for (int e = 0; e < E; ++e) {
            const Member& m = fam[static_cast<std::size_t>(e)];
            if (!m.t)
                throw InputError("layer " + std::to_string(key.first) + ": expert " + std::to_string(e) + " has no " +
                                 key.second);
            const TensorInfo& a = *fam[0].t;
            if (m.t->dtype != a.dtype || m.t->shape != a.shape)
                throw InputError(m.t->name + ": " + std::string(dtype_name(m.t->dtype)) + " " + shape_text(m.t->shape) +
                                 " differs from " + a.name + " (" + std::string(dtype_name(a.dtype)) + " " +
                                 shape_text(a.shape) + "); experts of one layer cannot exchange their contents");
        }
    }

    for (std::size_t f = 0; f < files.size(); ++f) {
        const SafetensorsFile& sf = files[f];
        OutputFile out;
        out.name = plan.sources[f].filename().string();
        out.size = sf.file_size();
        const std::uint64_t base = 8 + sf.header_size();
        auto push = [&](std::uint64_t dst, int sfile, std::uint64_t src, std::uint64_t len) {
            if (len == 0) return;
            if (!out.segments.empty()) {
                CopySegment& b = out.segments.back();
                if (b.src_file == sfile && b.dst + b.len == dst && b.src + b.len == src) {
                    b.len += len;
                    return;
                }
            }
            out.segments.push_back({dst, sfile, src, len});
        };
        std::uint64_t cursor = 0;
        const int self = static_cast<int>(f);
        for (const TensorInfo& t : sf.tensors()) {
            const std::uint64_t dst = base + t.data_begin;
            if (dst > cursor) push(cursor, self, cursor, dst - cursor);
            cursor = std::max(cursor, dst + t.nbytes());
            const TensorClass& tc = *cls.at(t.name);
            const bool ck_moe = tc.layer >= 0 && plan.source_index.count(tc.layer);
            const bool moves = ck_moe && (tc.role == TensorRole::ExpertPerTensor || tc.role == TensorRole::ExpertStacked ||
                                          (req.permute_router &&
                                           (tc.role == TensorRole::Router || tc.role == TensorRole::RouterBias)));
            if (!moves) {
                push(dst, self, dst, t.nbytes());
                continue;
            }
            const std::vector<int>& src = plan.source_index.at(tc.layer);
            if (tc.role == TensorRole::ExpertPerTensor) {
                ++plan.expert_tensors;
                const Member& m = families.at({tc.layer, family_key(tc.name, tc.expert)})
                                      [static_cast<std::size_t>(src[static_cast<std::size_t>(tc.expert)])];
                const std::uint64_t sbase = 8 + files[static_cast<std::size_t>(m.file)].header_size();
                push(dst, m.file, sbase + m.t->data_begin, t.nbytes());
                if (m.t != &t) {
                    ++plan.moved_tensors;
                    out.moved_bytes += t.nbytes();
                }
                continue;
            }
            // Stacked expert tensor, router [E, H] or router bias [E]: gather slabs along axis 0.
            (tc.role == TensorRole::ExpertStacked ? plan.expert_tensors : plan.router_tensors) += 1;
            if (t.shape.empty() || t.shape[0] != static_cast<std::uint64_t>(E) || t.nbytes() % static_cast<std::uint64_t>(E) != 0)
                throw InputError(t.name + ": " + std::to_string(t.nbytes()) + " bytes do not split into " +
                                 std::to_string(E) + " equal expert slabs along axis 0");
            const std::uint64_t slab = t.nbytes() / static_cast<std::uint64_t>(E);
            bool moved = false;
            for (int d = 0; d < E; ++d) {
                const int s = src[static_cast<std::size_t>(d)];
                push(dst + static_cast<std::uint64_t>(d) * slab, self, dst + static_cast<std::uint64_t>(s) * slab, slab);
                if (s != d) {
                    moved = true;
                    out.moved_bytes += slab;
                }
            }
            if (moved) ++plan.moved_tensors;
        }
        if (cursor < out.size) push(cursor, self, cursor, out.size - cursor);
        plan.moved_bytes += out.moved_bytes;
        plan.total_bytes += out.size;
        plan.outputs.push_back(std::move(out));
    }
    for (const fs::path& p : plan.other_files) {
        const fs::file_status st = fs::symlink_status(p);
        if (fs::is_regular_file(st)) plan.total_bytes += fs::file_size(p);
        else if (fs::is_directory(st))
            for (const auto& de : fs::recursive_directory_iterator(p))  // does not follow symlinks
                if (fs::is_regular_file(de.symlink_status())) plan.total_bytes += de.file_size();
    }

    // --- provenance sidecar --------------------------------------------------------------------------
    json sc;
    sc["format"] = "routepack-rewrite";
    sc["version"] = 1;
    sc["direction"] = req.direction == RewriteDirection::Apply ? "apply" : "inverse";
    sc["output_order"] = req.direction == RewriteDirection::Apply ? "physical" : "logical";
    sc["permute_router"] = req.permute_router;
    sc["plan"] = {{"origin", req.plan_origin},
                  {"fingerprint", req.plan_fingerprint},
                  {"placement_fingerprint", plan.placement_fingerprint}};
    json files_j = json::array();
    for (std::size_t f = 0; f < files.size(); ++f)
        files_j.push_back({{"name", plan.outputs[f].name}, {"bytes", plan.outputs[f].size}});
    sc["source"] = {{"path", input.string()},
                    {"fingerprint", plan.source_fingerprint},
                    {"fingerprint_covers", "shard names, sizes and header bytes"},
                    {"scheme", plan.scheme},
                    {"experts", E},
                    {"moe_layers", format_layer_list(plan.checkpoint_layers)},
                    {"files", files_j}};
    json lm = json::object();
    for (const auto& [p, c] : plan.layer_map)
        if (ck_layers.count(c)) lm[std::to_string(p)] = c;
    sc["layer_map"] = lm;
    sc["physical_to_logical_map_rows"] = "absolute checkpoint layer ids";
    sc["moved_tensors"] = plan.moved_tensors;
    sc["moved_bytes"] = plan.moved_bytes;
    // Pretty-printed, but each map row on one line (E ints), appended as the last member.
    std::string text = sc.dump(2);
    text.erase(text.find_last_of('}'));
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
    text += ",\n  \"physical_to_logical_map\": {";
    bool first_row = true;
    for (const auto& [c, r] : row_of_ck) {
        std::vector<int> p2l(static_cast<std::size_t>(E));
        for (int e = 0; e < E; ++e) p2l[static_cast<std::size_t>(pi.at(r, e))] = e;
        text += std::string(first_row ? "" : ",") + "\n    \"" + std::to_string(c) + "\": " + json(p2l).dump();
        first_row = false;
    }
    text += "\n  }\n}\n";
    plan.sidecar_json = std::move(text);
    plan.total_bytes += plan.sidecar_json.size();

    // Free space on the output's file system (checked again by nothing later: the rename is atomic).
    {
        const fs::path parent = output.parent_path();
        std::uint64_t free_bytes = 0;
        if (const char* f = std::getenv("ROUTEPACK_TEST_FREE_BYTES")) {
            free_bytes = std::strtoull(f, nullptr, 10);
        } else {
            struct statvfs st {};
            if (::statvfs(parent.c_str(), &st) == 0) free_bytes = static_cast<std::uint64_t>(st.f_bavail) * st.f_frsize;
            else free_bytes = UINT64_MAX;
        }
        if (free_bytes < plan.total_bytes + (16ull << 20))
            throw InputError(parent.string() + ": not enough free space: the rewrite writes " +
                             fmt_bytes(plan.total_bytes) + " (+16 MB margin), " + fmt_bytes(free_bytes) + " free");
    }
    return plan;
}

std::uint64_t execute_rewrite_cpu(const RewritePlan& plan, const fs::path& dir, int workers,
                                  const RewriteProgressFn& progress, const std::atomic<bool>* cancel) {
    std::vector<Fd> src;
    for (const fs::path& p : plan.sources) src.push_back(open_read(p));
    std::uint64_t total = 0, done = 0, written = 0;
    for (const OutputFile& f : plan.outputs) total += f.size;
    long exit_after = -1;
    if (const char* e = std::getenv("ROUTEPACK_TEST_REWRITE_EXIT_AFTER_FILES")) exit_after = std::atol(e);
    long files_done = 0, raise_after = -1;
    if (const char* e = std::getenv("ROUTEPACK_TEST_REWRITE_SIGINT_AFTER_FILES")) raise_after = std::atol(e);
    for (const OutputFile& f : plan.outputs) {
        const fs::path out_path = dir / f.name;
        Fd out(::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
        if (out.fd < 0) throw InputError(out_path.string() + ": cannot create: " + std::strerror(errno));
        if (::ftruncate(out.fd, static_cast<off_t>(f.size)) != 0)
            throw InputError(out_path.string() + ": cannot size to " + std::to_string(f.size) + " bytes: " +
                             std::strerror(errno));
        const std::vector<Piece> pieces = split_pieces(f);
        for_pieces(pieces, workers, "write", done, total, progress, cancel, [&](const Piece& p) {
            copy_piece(src[static_cast<std::size_t>(p.src_file)].fd, out.fd, p,
                       plan.sources[static_cast<std::size_t>(p.src_file)], out_path);
        });
        if (::fdatasync(out.fd) != 0) throw InputError(out_path.string() + ": sync failed: " + std::strerror(errno));
        written += f.size;
        ++files_done;
        if (exit_after >= 0 && files_done >= exit_after) ::_exit(3);  // test hook: a killed rewrite
        if (raise_after >= 0 && files_done == raise_after) ::raise(SIGINT);  // test hook: Ctrl-C mid-rewrite
    }
    return written;
}

std::string verify_rewrite(const RewritePlan& plan, const fs::path& dir, const RewriteProgressFn& progress,
                           const std::atomic<bool>* cancel) {
    std::vector<Fd> src;
    for (const fs::path& p : plan.sources) src.push_back(open_read(p));
    std::uint64_t total = 0, done = 0;
    for (const OutputFile& f : plan.outputs) total += f.size;
    for (const OutputFile& f : plan.outputs) {
        const fs::path out_path = dir / f.name;
        std::error_code ec;
        const auto size = fs::file_size(out_path, ec);
        if (ec) return out_path.string() + ": missing";
        if (size != f.size)
            return out_path.string() + ": " + std::to_string(size) + " bytes, expected " + std::to_string(f.size);
        Fd out = open_read(out_path);
        std::atomic<std::uint64_t> first_bad{UINT64_MAX};
        const std::vector<Piece> pieces = split_pieces(f);
        for_pieces(pieces, 0, "verify", done, total, progress, cancel, [&](const Piece& p) {
            thread_local std::vector<char> a, b;
            a.resize(p.len);
            b.resize(p.len);
            pread_all(out.fd, a.data(), p.len, p.dst, out_path);
            pread_all(src[static_cast<std::size_t>(p.src_file)].fd, b.data(), p.len, p.src,
                      plan.sources[static_cast<std::size_t>(p.src_file)]);
            if (std::memcmp(a.data(), b.data(), p.len) != 0) {
                std::uint64_t k = 0;
                while (a[k] == b[k]) ++k;
                std::uint64_t cur = first_bad.load();
                while (p.dst + k < cur && !first_bad.compare_exchange_weak(cur, p.dst + k)) {
                }
            }
        });
        if (const std::uint64_t bad = first_bad.load(); bad != UINT64_MAX) {
            const SafetensorsFile sf = SafetensorsFile::open(out_path);
            std::string tensor = "header";
            for (const TensorInfo& t : sf.tensors())
                if (bad >= 8 + sf.header_size() + t.data_begin && bad < 8 + sf.header_size() + t.data_end) tensor = t.name;
            return out_path.string() + ": byte " + std::to_string(bad) + " (" + tensor + ") differs from its source";
        }
    }
    return {};
}

RewriteReport rewrite_checkpoint(const RewriteRequest& req, const RewriteProgressFn& progress,
                                 const std::atomic<bool>* cancel) {
    const RewritePlan plan = plan_rewrite(req);
    RewriteReport rep;
    rep.moved_bytes = plan.moved_bytes;
    rep.moved_tensors = plan.moved_tensors;
    rep.files = static_cast<int>(plan.outputs.size() + plan.other_files.size()) + 1;

    bool use_cuda = false;
    std::string why;
    if (req.device == RewriteDevice::Cuda) {
        if (!cuda_rewrite_available(&why)) throw InputError("--device cuda: " + why);
        use_cuda = true;
    } else if (req.device == RewriteDevice::Auto) {
        use_cuda = cuda_rewrite_available(&why);
    }

    const fs::path output = output_path(req.output);
    const fs::path parent = output.parent_path();  // a folder (checked when planning)
    std::error_code ec;

    // Stale partial folders of killed rewrites of the same output.
    const std::string stem = "." + output.filename().string() + ".routepack-partial-";
    for (const auto& de : fs::directory_iterator(parent, ec)) {
        const std::string n = de.path().filename().string();
        if (n.compare(0, stem.size(), stem) != 0 || n.size() == stem.size() || n.size() - stem.size() > 9) continue;
        if (n.find_first_not_of("0123456789", stem.size()) != std::string::npos) continue;
        const long pid = std::atol(n.c_str() + stem.size());
        // Only our own folders (marker inside), only of processes that are gone.
        if (pid > 1 && !pid_alive(pid) && fs::is_directory(fs::symlink_status(de.path())) &&
            fs::is_regular_file(fs::symlink_status(de.path() / kPartialMarker)))
            fs::remove_all(de.path(), ec);
    }

    const fs::path tmp = parent / (stem + std::to_string(::getpid()));
    fs::remove_all(tmp, ec);
    if (!fs::create_directory(tmp, ec))
        throw InputError(tmp.string() + ": cannot create the temporary output folder: " + ec.message());
    try {
        std::ofstream(tmp / kPartialMarker) << "routepack rewrite in progress, pid " << ::getpid() << "\n";
        const auto t0 = std::chrono::steady_clock::now();
        if (use_cuda) {
            std::string dev;
            rep.bytes_written = execute_rewrite_cuda(plan, tmp, progress, cancel, &dev);
            rep.device = dev;
        } else {
            rep.bytes_written = execute_rewrite_cpu(plan, tmp, req.workers, progress, cancel);
            rep.device = "cpu";
        }
        for (const fs::path& p : plan.other_files) {
            fs::copy(p, tmp / p.filename(), fs::copy_options::recursive | fs::copy_options::copy_symlinks, ec);
            if (ec) throw InputError(p.string() + ": cannot copy: " + ec.message());
            if (fs::is_regular_file(fs::symlink_status(p))) rep.bytes_written += fs::file_size(p);
        }
        {
            const fs::path scp = tmp / kRewriteSidecar;
            std::ofstream o(scp, std::ios::binary);
            o << plan.sidecar_json;
            o.close();
            if (!o) throw InputError(scp.string() + ": cannot write");
            rep.bytes_written += plan.sidecar_json.size();
        }
        if (int dfd = ::open(tmp.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dfd >= 0) {
            ::fsync(dfd);
            ::close(dfd);
        }
        rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (req.verify) {
            const auto v0 = std::chrono::steady_clock::now();
            const std::string diff = verify_rewrite(plan, tmp, progress, cancel);
            if (!diff.empty()) throw InputError("--verify: " + diff);
            rep.verified = true;
            rep.verify_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - v0).count();
        }
        fs::remove(tmp / kPartialMarker, ec);
        if (fs::exists(output, ec)) fs::remove(output, ec);  // an empty folder (checked when planning)
        fs::rename(tmp, output, ec);
        if (ec) throw InputError(output.string() + ": cannot move the finished output into place: " + ec.message());
    } catch (...) {
        std::error_code ec2;
        fs::remove_all(tmp, ec2);
        throw;
    }
    return rep;
}

}  // namespace routepack::gpu
