// Rewrite planning (gpu/rewrite/rewrite_plan.h): plan_rewrite runs the named steps of Planner in order;
// each step checks one thing or builds one part of the RewritePlan. The first failing check throws.
#include "gpu/rewrite/rewrite_plan.h"

#include "core/model/trace.h"
#include "core/util/errors.h"
#include "core/util/input_file.h"
#include "core/util/json.h"
#include "core/util/json_field.h"
#include "gpu/io/posix_io.h"
#include "gpu/safetensors/checkpoint_scheme.h"
#include "gpu/safetensors/safetensors.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <set>
#include <sys/statvfs.h>

namespace routepack::gpu {
namespace fs = std::filesystem;
using json = nlohmann::json;
using io::Fd;
using io::open_read;

namespace {

/// Shards are mapped, not read whole: only the regular-file check applies.
constexpr InputFileKind kShard{"safetensors shard", ~std::uint64_t(0)};

std::string read_text(const fs::path& p, const InputFileKind& kind) {
    return read_input_file(p, kind);
}

std::string fmt_bytes(std::uint64_t b) {
    char buf[64];
    if (b >= 1000000000ull)
        std::snprintf(buf, sizeof buf, "%.2f GB", static_cast<double>(b) / 1e9);
    else if (b >= 1000000ull)
        std::snprintf(buf, sizeof buf, "%.1f MB", static_cast<double>(b) / 1e6);
    else
        std::snprintf(buf, sizeof buf, "%llu bytes", static_cast<unsigned long long>(b));
    return buf;
}

std::string join_layers(const std::vector<int>& v) {
    return v.empty() ? std::string("none") : format_layer_list(v);
}

/// Replaces the expert index in `experts.{e}.` (last occurrence) with `*`: the family of a per-expert tensor.
std::string family_key(const std::string& name, int expert) {
    const std::string needle = "experts." + std::to_string(expert) + ".";
    const std::size_t pos = name.rfind(needle);
    if (pos == std::string::npos) return name; // cannot happen for classified names
    return name.substr(0, pos) + "experts.*." + name.substr(pos + needle.size());
}

std::string shape_text(const std::vector<std::uint64_t>& s) {
    std::string t = "[";
    for (std::size_t i = 0; i < s.size(); ++i)
        t += (i ? ", " : "") + std::to_string(s[i]);
    return t + "]";
}

/// Parsed provenance sidecar of an input folder, if any.
struct InputSidecar {
    std::string order; ///< "physical" | "logical"
    std::string placement_fingerprint;
    bool permute_router = false;
    std::string plan_origin;
};

/// The input folder's routepack-rewrite.json, read through JsonField: InputError "<p>: not a file",
/// "<p>: not a routepack rewrite sidecar: malformed JSON at byte B" (or ": malformed JSON:
/// <description>"), or JsonField's "<p>: output_order is missing", "<p>: output_order is \"x\", not
/// \"physical\" or \"logical\"", "<p>: plan.placement_fingerprint is 7, not a string", "<p>:
/// permute_router is 1, not true or false", "<p>: plan.origin is null, not a string".
std::optional<InputSidecar> read_input_sidecar(const fs::path& dir) {
    const fs::path p = dir / kRewriteSidecar;
    std::error_code ec;
    if (!fs::exists(fs::symlink_status(p, ec))) return std::nullopt;
    if (!fs::is_regular_file(p, ec)) throw InputError(p.string() + ": not a file");
    json j;
    try {
        j = util::parse_json_strict(read_text(p, input_files::kRewriteSidecar), p.string());
    } catch (const json::parse_error& e) {
        throw InputError(p.string() + ": not a routepack rewrite sidecar: malformed JSON at byte " +
                         std::to_string(e.byte));
    } catch (const json::exception& e) {
        throw InputError(p.string() +
                         ": not a routepack rewrite sidecar: malformed JSON: " + util::json_error_description(e));
    }
    const util::JsonField doc(j, p.string());
    doc.object();
    InputSidecar s;
    const util::JsonField order = doc["output_order"];
    s.order = order.string();
    if (s.order != "physical" && s.order != "logical") order.fail("\"physical\" or \"logical\"");
    const util::JsonField plan = doc["plan"];
    plan.object();
    s.placement_fingerprint = plan["placement_fingerprint"].string();
    s.permute_router = doc["permute_router"].boolean();
    if (const util::JsonField origin = plan["origin"]; origin.exists()) s.plan_origin = origin.string();
    return s;
}

/// The state of one planning run: the request, the plan being built and what the steps pass on.
class Planner {
public:
    explicit Planner(const RewriteRequest& r) : req(r), pi(r.placement), E(r.placement.experts) {}

    /// Runs every step in order (the order of the checks is part of the interface: the first failing
    /// check names the problem).
    RewritePlan run() {
        resolve_input();
        check_output_location();
        collect_sources();
        index_tensors();
        read_model_config();
        match_layers();
        build_index_maps();
        fingerprint_sources();
        check_input_sidecar();
        collect_expert_families();
        build_copy_lists();
        write_provenance();
        check_free_space();
        return std::move(plan);
    }

private:
    /// The input exists; sets input (canonical), input_is_dir and input_dir. InputError "input: missing",
    /// "output: missing" (about rewrite_setting "input", "output"), "<input>: no such file or folder".
    void resolve_input() {
        std::error_code ec;
        if (req.input.empty()) throw InputError("", rewrite_setting("input"), ": missing");
        if (req.output.empty()) throw InputError("", rewrite_setting("output"), ": missing");
        if (!fs::exists(req.input, ec)) throw InputError(req.input.string() + ": no such file or folder");
        input = fs::canonical(req.input);
        input_is_dir = fs::is_directory(input);
        input_dir = input_is_dir ? input : input.parent_path();
    }

    /// --workers in range; the output is no symlink, not the input nor inside it, absent or an empty folder,
    /// and its parent exists. Sets output (output_path).
    void check_output_location() {
        std::error_code ec;
        if (req.workers < 0 || req.workers > kMaxRewriteWorkers)
            throw InputError("", rewrite_setting("workers"),
                             ": expected 0 (all cores) to " + std::to_string(kMaxRewriteWorkers) + ", got " +
                                 std::to_string(req.workers));
        output = output_path(req.output);
        if (fs::is_symlink(output, ec))
            throw InputError(req.output.string() + ": output is a symbolic link; name a folder to create");
        {
            fs::path out_canon = fs::weakly_canonical(output);
            if (out_canon == input || out_canon == input_dir)
                throw InputError(req.output.string() + ": output is the input; the rewrite never overwrites its input");
            // Inside the input's folder is refused for a single file too: a later rewrite of that
            // folder would take the output's shards for input shards.
            const std::string ic = input_dir.string() + "/", oc = out_canon.string() + "/";
            if (oc.compare(0, ic.size(), ic) == 0)
                throw InputError(req.output.string() + ": output lies inside the input folder " + input_dir.string());
            if (fs::exists(output, ec)) {
                if (!fs::is_directory(output, ec) || !fs::is_empty(output, ec))
                    throw InputError(req.output.string() + ": output exists and is not an empty folder");
            }
            if (!fs::is_directory(output.parent_path(), ec))
                throw InputError(output.parent_path().string() + ": no such folder (for ", rewrite_setting("output"),
                                 ")");
        }
    }

    /// The source shards (the index's, else every .safetensors of the folder, sorted; or the one file) and
    /// the other files copied verbatim (regular files, folders and symlinks only). Sets index when present.
    void collect_sources() {
        std::error_code ec;
        if (input_is_dir) {
            if (fs::exists(input / "model.safetensors.index.json")) {
                index = read_index(input);
                for (const std::string& s : index->shards()) {
                    if (!fs::exists(input / s, ec))
                        throw InputError((input / "model.safetensors.index.json").string() +
                                         ": weight_map names shard " + s + ", which is missing");
                    check_input_file(input / s, kShard);
                    plan.sources.push_back(input / s);
                }
            } else {
                for (const auto& de : fs::directory_iterator(input))
                    if (de.is_regular_file() && de.path().extension() == ".safetensors")
                        plan.sources.push_back(de.path());
                std::sort(plan.sources.begin(), plan.sources.end());
            }
            if (plan.sources.empty()) throw InputError(input.string() + ": no .safetensors files in the folder");
            std::set<fs::path> srcset(plan.sources.begin(), plan.sources.end());
            auto check_kind = [](const fs::path& p) {
                const fs::file_status st = fs::symlink_status(p);
                if (!fs::is_regular_file(st) && !fs::is_directory(st) && !fs::is_symlink(st))
                    throw InputError(p.string() +
                                     ": not a regular file, folder or symbolic link; the rewrite copies only those");
            };
            for (const auto& de : fs::directory_iterator(input)) {
                if (srcset.count(de.path()) || de.path().filename() == kRewriteSidecar) continue;
                check_kind(de.path());
                if (fs::is_directory(fs::symlink_status(de.path())))
                    for (const auto& sub : fs::recursive_directory_iterator(de.path()))
                        check_kind(sub.path());
                plan.other_files.push_back(de.path());
            }
            std::sort(plan.other_files.begin(), plan.other_files.end());
        } else {
            if (input.extension() != ".safetensors")
                throw InputError(input.string() + ": expected a checkpoint folder or a .safetensors file");
            plan.sources.push_back(input);
        }
    }

    /// Opens every shard (headers validated) and checks that every tensor is in one shard only and that the
    /// index's weight_map and the shards agree both ways. Fills files, where and names_and_shapes.
    void index_tensors() {
        files.reserve(plan.sources.size());
        for (const fs::path& p : plan.sources)
            files.push_back(SafetensorsFile::open(p));

        // Every tensor once; the index (when present) agrees with the shards.
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
                if (it == where.end())
                    throw InputError(ip + ": weight_map names tensor " + name + ", which is in no shard");
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
    }

    /// config.json beside the checkpoint, when present: the model (model_from_hf_config) and n_group (> 1:
    /// group-limited routing; null or absent: 1). --permute-router needs it. InputError "<config.json>:
    /// n_group is \"4\", not an integer in 1..1048576" (JsonField's wording).
    void read_model_config() {
        std::error_code ec;
        const fs::path config = input_dir / "config.json";
        if (fs::is_regular_file(config, ec)) {
            const std::string text = read_text(config, input_files::kModelConfig);
            model = model_from_hf_config(text, config.string());
            const json j = util::parse_json_document(text, config.string()); // as model_from_hf_config read it
            if (const util::JsonField g = util::JsonField(j, config.string())["n_group"]; g.given())
                n_group = static_cast<int>(g.integer(1, 1 << 20));
            model_origin = config.string();
        } else if (req.permute_router) {
            throw InputError("", rewrite_setting("permute_router"),
                             ": no config.json beside " + input.string() +
                                 "; it is needed to check group-limited routing (n_group) before router rows move");
        }
    }

    /// The placement fits the plan's MoE layers; the layer map names plan layers; without config.json the
    /// checkpoint takes the plan's model at the mapped layers. Classifies the tensors (classify_checkpoint)
    /// and maps every checkpoint MoE layer to a placement row, both ways complete; --permute-router needs a
    /// router per MoE layer. Sets plan.scheme / experts / checkpoint_layers, rep, ck_layers, row_of_ck.
    void match_layers() {
        if (pi.layers != static_cast<int>(req.plan_layers.size()) || E <= 0 ||
            pi.slot.size() != static_cast<std::size_t>(pi.layers) * static_cast<std::size_t>(E))
            throw InputError(req.plan_origin + ": placement has " + std::to_string(pi.layers) + " rows for " +
                             std::to_string(req.plan_layers.size()) + " MoE layers");
        plan.layer_map = req.layer_map;
        if (plan.layer_map.empty())
            for (int l : req.plan_layers)
                plan.layer_map[l] = l;
        for (const auto& [p, c] : plan.layer_map)
            if (std::find(req.plan_layers.begin(), req.plan_layers.end(), p) == req.plan_layers.end())
                throw InputError("", rewrite_setting("layer_map"),
                                 ": plan layer " + std::to_string(p) + " is not a MoE layer of the plan (" +
                                     join_layers(req.plan_layers) + ")");
        if (model_origin.empty()) {
            // No config.json: the checkpoint has the plan's experts at the mapped layers.
            model = req.plan_model;
            model.moe_layers.clear();
            for (const auto& [p, c] : plan.layer_map)
                model.moe_layers.push_back(c);
            std::sort(model.moe_layers.begin(), model.moe_layers.end());
            model.num_hidden_layers = std::max(model.num_hidden_layers, model.moe_layers.back() + 1);
            model.experts = E;
            model_origin = "the plan's model (no config.json beside the checkpoint)";
        }
        if (model.experts != E)
            throw InputError(req.plan_origin + ": plan has " + std::to_string(E) +
                             " experts per MoE layer, the checkpoint (" + model_origin + ") has " +
                             std::to_string(model.experts));
        try {
            rep = classify_checkpoint(names_and_shapes, model);
        } catch (const InputError& e) {
            const std::string why =
                std::string(e.what()) + " (MoE layers " + join_layers(model.moe_layers) + " from " + model_origin;
            if (req.layer_map.empty()) throw InputError(why + ")");
            throw InputError(why + " and ", rewrite_setting("layer_map"), ")");
        }
        plan.scheme = rep.scheme;
        plan.experts = E;
        plan.checkpoint_layers = rep.moe_layers;
        ck_layers = std::set<int>(rep.moe_layers.begin(), rep.moe_layers.end());
        for (std::size_t r = 0; r < req.plan_layers.size(); ++r) {
            const int p = req.plan_layers[r];
            auto it = plan.layer_map.find(p);
            if (it == plan.layer_map.end()) continue; // not in this checkpoint (explicit layer map)
            if (!ck_layers.count(it->second)) {
                const std::string why =
                    req.plan_origin + ": plan layer " + std::to_string(p) +
                    (it->second != p ? " (checkpoint layer " + std::to_string(it->second) + ")" : std::string()) +
                    " is not a MoE layer of the checkpoint (MoE layers " + join_layers(rep.moe_layers) + ")";
                if (!req.layer_map.empty()) throw InputError(why);
                throw InputError(why + "; use ", rewrite_setting("layer_map"), "");
            }
            row_of_ck[it->second] = static_cast<int>(r);
        }
        for (int c : rep.moe_layers)
            if (!row_of_ck.count(c)) {
                std::vector<int> covered;
                for (const auto& [pc, r] : row_of_ck)
                    covered.push_back(pc);
                const std::string why = input.string() + ": checkpoint MoE layer " + std::to_string(c) +
                                        " has no placement row in the plan (plan MoE layers " +
                                        join_layers(req.plan_layers) + ")";
                if (req.layer_map.empty()) throw InputError(why + "; use ", rewrite_setting("layer_map"), "");
                throw InputError(why + "; ", rewrite_setting("layer_map"),
                                 " covers checkpoint layers " + join_layers(covered));
            }
        if (req.permute_router) {
            std::set<int> with_router;
            for (const TensorClass& tc : rep.tensors)
                if (tc.role == TensorRole::Router) with_router.insert(tc.layer);
            for (int c : rep.moe_layers)
                if (!with_router.count(c))
                    throw InputError("", rewrite_setting("permute_router"),
                                     ": checkpoint MoE layer " + std::to_string(c) + " has no router tensor with " +
                                         std::to_string(E) +
                                         " rows (mlp.gate.weight, block_sparse_moe.gate.weight or mlp.router.weight); "
                                         "a self-contained export needs it");
        }
    }

    /// Per checkpoint MoE layer, the output index -> source index map (apply: physical_to_logical_map row;
    /// inverse: the placement row), checking each row is a permutation and, with --permute-router and
    /// n_group > 1, that no expert group is split. Sets plan.source_index and plan.placement_fingerprint
    /// (FNV-1a over layer ids and physical_to_logical rows).
    void build_index_maps() {
        std::vector<std::uint64_t> fp_words;
        for (const auto& [c, r] : row_of_ck) {
            std::vector<int> p2l(static_cast<std::size_t>(E), -1), src(static_cast<std::size_t>(E));
            for (int e = 0; e < E; ++e) {
                const int v = pi.at(r, e);
                if (v < 0 || v >= E || p2l[static_cast<std::size_t>(v)] != -1)
                    throw InputError(req.plan_origin + ": placement of plan layer " +
                                     std::to_string(req.plan_layers[r]) + " is not a permutation of 0.." +
                                     std::to_string(E - 1));
                p2l[static_cast<std::size_t>(v)] = e;
            }
            for (int d = 0; d < E; ++d)
                src[static_cast<std::size_t>(d)] =
                    req.direction == RewriteDirection::Apply ? p2l[static_cast<std::size_t>(d)] : pi.at(r, d);
            fp_words.push_back(static_cast<std::uint64_t>(c));
            for (int v : p2l)
                fp_words.push_back(static_cast<std::uint64_t>(v));
            if (req.permute_router && n_group > 1) {
                if (E % n_group != 0)
                    throw InputError(model_origin + ": n_group " + std::to_string(n_group) +
                                     " does not divide experts " + std::to_string(E));
                const int gs = E / n_group;
                for (int g = 0; g < n_group; ++g) {
                    const int h = pi.at(r, g * gs) / gs;
                    for (int e = g * gs; e < (g + 1) * gs; ++e)
                        if (pi.at(r, e) / gs != h)
                            throw InputError(
                                "", {{rewrite_setting("permute_router"),
                                      ": layer " + std::to_string(c) + ": the placement splits expert group " +
                                          std::to_string(g) + " (experts " + std::to_string(g * gs) + "-" +
                                          std::to_string((g + 1) * gs - 1) + ") across slot groups " +
                                          std::to_string(h) + " and " + std::to_string(pi.at(r, e) / gs) +
                                          "; the model routes group-limited (n_group " + std::to_string(n_group) +
                                          "), so permuting the router would change its output. Use a "
                                          "placement that keeps each group's experts together, or rewrite "
                                          "without "},
                                     {rewrite_setting("permute_router"), ""}});
                }
            }
            plan.source_index[c] = std::move(src);
        }
        plan.placement_fingerprint = hex64(fnv1a64(fp_words.data(), fp_words.size() * sizeof(std::uint64_t)));
    }

    /// plan.source_fingerprint: FNV-1a over every shard's file name, size and header bytes, in source order.
    void fingerprint_sources() {
        {
            std::uint64_t h = 0xcbf29ce484222325ULL;
            for (std::size_t f = 0; f < files.size(); ++f) {
                const std::string name = plan.sources[f].filename().string();
                const std::uint64_t size = files[f].file_size();
                std::string header(static_cast<std::size_t>(8 + files[f].header_size()), '\0');
                Fd fd = open_read(plan.sources[f]);
                io::pread_exact(fd.get(), header.data(), header.size(), 0, plan.sources[f]);
                h = fnv1a64(name.data(), name.size(), h);
                h = fnv1a64(&size, sizeof size, h);
                h = fnv1a64(header.data(), header.size(), h);
            }
            plan.source_fingerprint = hex64(h);
        }
    }

    /// Refuses rewriting twice: apply of a folder already in physical order; inverse of one in logical
    /// order, of another placement or with a different --permute-router (the input's routepack-rewrite.json).
    void check_input_sidecar() {
        {
            if (auto sc = read_input_sidecar(input_dir)) {
                if (req.direction == RewriteDirection::Apply && sc->order == "physical")
                    throw InputError(input.string() + ": already in physical order (" + std::string(kRewriteSidecar) +
                                         ": placement " + sc->placement_fingerprint + "); invert it first (",
                                     rewrite_setting("inverse"), " with that plan)");
                if (req.direction == RewriteDirection::Inverse) {
                    if (sc->order == "logical")
                        throw InputError(input.string() + ": already in logical order (" +
                                         std::string(kRewriteSidecar) + "); nothing to invert");
                    if (sc->placement_fingerprint != plan.placement_fingerprint)
                        throw InputError(input.string() + ": was rewritten with placement " +
                                         sc->placement_fingerprint +
                                         (sc->plan_origin.empty() ? std::string() : " (" + sc->plan_origin + ")") +
                                         ", not this plan's " + plan.placement_fingerprint);
                    if (sc->permute_router != req.permute_router)
                        throw InputError(input.string() + std::string(": was rewritten ") +
                                             (sc->permute_router ? "with " : "without "),
                                         rewrite_setting("permute_router"), "; invert it the same way");
                }
            }
        }
    }

    /// Groups per-expert tensors into families (layer, name with `experts.*.`) of E members and checks every
    /// member exists with one dtype and shape. Fills families and cls.
    void collect_expert_families() {
        for (const TensorClass& tc : rep.tensors)
            cls[tc.name] = &tc;
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
                    throw InputError("layer " + std::to_string(key.first) + ": expert " + std::to_string(e) +
                                     " has no " + key.second);
                const TensorInfo& a = *fam[0].t;
                if (m.t->dtype != a.dtype || m.t->shape != a.shape)
                    throw InputError(m.t->name + ": " + std::string(dtype_name(m.t->dtype)) + " " +
                                     shape_text(m.t->shape) + " differs from " + a.name + " (" +
                                     std::string(dtype_name(a.dtype)) + " " + shape_text(a.shape) +
                                     "); experts of one layer cannot exchange their contents");
            }
        }
    }

    /// Per source shard, the output file's copy segments in output order (adjacent segments merged): bytes of
    /// tensors that do not move copy in place, per-expert tensors copy from the family member of their source
    /// index, stacked tensors (routers with --permute-router) gather E slabs along axis 0. Adds the other files'
    /// bytes to plan.total_bytes.
    void build_copy_lists() {
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
                const bool moves =
                    ck_moe &&
                    (tc.role == TensorRole::ExpertPerTensor || tc.role == TensorRole::ExpertStacked ||
                     tc.role == TensorRole::ExpertFlatChunks ||
                     (req.permute_router && (tc.role == TensorRole::Router || tc.role == TensorRole::RouterBias)));
                if (!moves) {
                    push(dst, self, dst, t.nbytes());
                    continue;
                }
                const std::vector<int>& src = plan.source_index.at(tc.layer);
                if (tc.role == TensorRole::ExpertPerTensor) {
                    ++plan.expert_tensors;
                    const Member& m = families.at(
                        {tc.layer,
                         family_key(tc.name,
                                    tc.expert)})[static_cast<std::size_t>(src[static_cast<std::size_t>(tc.expert)])];
                    const std::uint64_t sbase = 8 + files[static_cast<std::size_t>(m.file)].header_size();
                    push(dst, m.file, sbase + m.t->data_begin, t.nbytes());
                    if (m.t != &t) {
                        ++plan.moved_tensors;
                        out.moved_bytes += t.nbytes();
                    }
                    continue;
                }
                // Stacked expert tensor, router [E, H] or router bias [E]: gather slabs along axis 0; a
                // GroupedMLP tensor: gather its E contiguous chunks (the same slabs of the flat storage).
                const bool flat = tc.role == TensorRole::ExpertFlatChunks;
                (tc.role == TensorRole::ExpertStacked || flat ? plan.expert_tensors : plan.router_tensors) += 1;
                if ((!flat && (t.shape.empty() || t.shape[0] != static_cast<std::uint64_t>(E))) ||
                    t.nbytes() % static_cast<std::uint64_t>(E) != 0)
                    throw InputError(t.name + ": " + std::to_string(t.nbytes()) + " bytes do not split into " +
                                     std::to_string(E) +
                                     (flat ? " equal contiguous expert chunks" : " equal expert slabs along axis 0"));
                const std::uint64_t slab = t.nbytes() / static_cast<std::uint64_t>(E);
                bool moved = false;
                for (int d = 0; d < E; ++d) {
                    const int s = src[static_cast<std::size_t>(d)];
                    push(dst + static_cast<std::uint64_t>(d) * slab, self, dst + static_cast<std::uint64_t>(s) * slab,
                         slab);
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
            if (fs::is_regular_file(st))
                plan.total_bytes += fs::file_size(p);
            else if (fs::is_directory(st))
                for (const auto& de : fs::recursive_directory_iterator(p)) // does not follow symlinks
                    if (fs::is_regular_file(de.symlink_status())) plan.total_bytes += de.file_size();
        }
    }

    /// plan.sidecar_json: the provenance file (format routepack-rewrite, version 1), pretty-printed with
    /// each physical_to_logical_map row on one line; its size counts in plan.total_bytes.
    void write_provenance() {
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
        while (!text.empty() && (text.back() == '\n' || text.back() == ' '))
            text.pop_back();
        text += ",\n  \"physical_to_logical_map\": {";
        bool first_row = true;
        for (const auto& [c, r] : row_of_ck) {
            std::vector<int> p2l(static_cast<std::size_t>(E));
            for (int e = 0; e < E; ++e)
                p2l[static_cast<std::size_t>(pi.at(r, e))] = e;
            text += std::string(first_row ? "" : ",") + "\n    \"" + std::to_string(c) + "\": " + json(p2l).dump();
            first_row = false;
        }
        text += "\n  }\n}\n";
        plan.sidecar_json = std::move(text);
        plan.total_bytes += plan.sidecar_json.size();
    }

    /// The output's file system has plan.total_bytes + 16 MB free (ROUTEPACK_TEST_FREE_BYTES overrides the
    /// statvfs figure in tests).
    void check_free_space() {
        // Free space on the output's file system (checked again by nothing later: the rename is atomic).
        {
            const fs::path parent = output.parent_path();
            std::uint64_t free_bytes = 0;
            if (const char* f = std::getenv("ROUTEPACK_TEST_FREE_BYTES")) {
                free_bytes = std::strtoull(f, nullptr, 10);
            } else {
                struct statvfs st {};
                if (::statvfs(parent.c_str(), &st) == 0)
                    free_bytes = static_cast<std::uint64_t>(st.f_bavail) * st.f_frsize;
                else
                    free_bytes = UINT64_MAX;
            }
            if (free_bytes < plan.total_bytes + (16ull << 20))
                throw InputError(parent.string() + ": not enough free space: the rewrite writes " +
                                 fmt_bytes(plan.total_bytes) + " (+16 MB margin), " + fmt_bytes(free_bytes) + " free");
        }
    }

    /// One member of an expert family: its shard and tensor.
    struct Member {
        int file;
        const TensorInfo* t;
    };

    const RewriteRequest& req;
    const Placement& pi; ///< req.placement
    const int E;         ///< experts per MoE layer (req.placement.experts)
    RewritePlan plan;
    fs::path input, input_dir, output; ///< canonical input, its folder, output_path(req.output)
    bool input_is_dir = false;
    std::optional<CheckpointIndex> index; ///< model.safetensors.index.json, when the folder has one
    std::vector<SafetensorsFile> files;   ///< one per plan.sources entry
    std::map<std::string, std::pair<int, const TensorInfo*>> where; ///< tensor name -> (file, tensor)
    std::vector<std::pair<std::string, std::vector<std::int64_t>>> names_and_shapes;
    ModelDescription model;
    int n_group = 1;              ///< config.json n_group (group-limited routing when > 1)
    std::string model_origin;     ///< where model came from (messages)
    SchemeReport rep;             ///< the classified tensors
    std::set<int> ck_layers;      ///< MoE layers of the checkpoint
    std::map<int, int> row_of_ck; ///< checkpoint layer -> placement row
    std::map<std::pair<int, std::string>, std::vector<Member>> families; ///< (layer, family) -> [E]
    std::map<std::string, const TensorClass*> cls;                       ///< tensor name -> its class
};

} // namespace

fs::path output_path(const fs::path& p) {
    fs::path o = fs::absolute(p).lexically_normal();
    while (o.has_relative_path() && o.filename().empty())
        o = o.parent_path();
    return o;
}

RewritePlan plan_rewrite(const RewriteRequest& req) {
    return Planner(req).run();
}

} // namespace routepack::gpu
