#include "app/cli.h"

#include "app/cmd_rewrite.h"

#include "core/util/errors.h"
#include "core/import/import.h"
#include "core/plan/budgets_json.h"
#include "core/util/atomic_file.h"
#include "core/util/json.h"
#include "core/util/text.h"
#include "core/util/input_file.h"
#include "core/plan/expert_map.h"
#include "core/plan/plan_file.h"
#include "core/util/rng.h"
#include "core/plan/planner.h"
#include "core/synth/synth.h"
#include "core/model/window_select.h"
#include "gpu/cuda/device.h"
#include "gpu/safetensors/synth_checkpoint.h"
#include "storage/demo.h"
#include "storage/library.h"

#include <CLI/CLI.hpp>
#include <fnmatch.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <charconv>
#include <cmath>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <numeric>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unistd.h>

namespace routepack::cli {

namespace {

std::atomic<bool> g_cancel{false};
extern "C" void on_sigint(int) { g_cancel.store(true); }

std::string fmt(const char* f, double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, f, v);
    return buf;
}

/// printf of several values into a string (table lines).
template <class... Args>
std::string fmt_line(const char* f, Args... args) {
    const int n = std::snprintf(nullptr, 0, f, args...);
    std::string out(static_cast<std::size_t>(std::max(n, 0)) + 1, '\0');
    std::snprintf(out.data(), out.size(), f, args...);
    out.pop_back();
    return out;
}

std::string human_bytes(std::uint64_t b) {
    if (b >= (1ull << 20)) return fmt("%.1f MiB", b / 1048576.0);
    if (b >= 1024) return fmt("%.1f KiB", b / 1024.0);
    return std::to_string(b) + " B";
}

/// Model flags shared by import (and later plan).
struct ModelFlags {
    std::string model;
    std::string model_config;
    int experts = 0;
    int top_k = 0;
    int layers = 0;
    std::string moe_layers;

    void add(CLI::App& app) {
        app.add_option("--model", model, "shipped model description (" + [] {
            std::string s;
            for (const auto& n : known_model_names()) s += (s.empty() ? "" : ", ") + n;
            return s;
        }() + ")");
        app.add_option("--model-config", model_config, "Hugging Face config.json of the model");
        app.add_option("--experts", experts, "routed experts per MoE layer (E)");
        app.add_option("--top-k", top_k, "experts per token (k)");
        app.add_option("--layers", layers, "decoder layers (num_hidden_layers)");
        app.add_option("--moe-layers", moe_layers, "absolute MoE layer ids, e.g. 1-26 or 1-47:2 or 0,2,4");
    }

    ModelDescription resolve() const {
        const int given = (!model.empty()) + (!model_config.empty());
        if (given > 1) throw InputError("give either --model or --model-config, not both");
        ModelDescription m;
        if (!model.empty()) m = known_model(model);
        if (!model_config.empty()) {
            m = model_from_hf_config(read_input_file(model_config, input_files::kModelConfig), model_config);
        }
        for (const auto& [flag, v] : {std::pair{"--experts", experts}, {"--top-k", top_k}, {"--layers", layers}})
            if (v < 0) throw InputError(std::string(flag) + " must be >= 1 (got " + std::to_string(v) + ")");
        if (experts) m.experts = experts;
        if (top_k) m.top_k = top_k;
        if (layers) m.num_hidden_layers = layers;
        if (!moe_layers.empty()) m.moe_layers = parse_layer_list(moe_layers);
        if ((experts || top_k || layers || !moe_layers.empty()) && given == 0) m.source = "flags";
        return m;
    }
};

double median(std::vector<std::int64_t> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? static_cast<double>(v[n / 2]) : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

nlohmann::json trace_json(const storage::Library& lib, const storage::TraceEntry& t, bool detail) {
    nlohmann::json j;
    j["name"] = t.name;
    j["format"] = t.format;
    j["load_only"] = t.load_only;
    j["samples"] = t.samples;
    j["model"] = {{"name", t.model.name},
                  {"num_hidden_layers", t.model.num_hidden_layers},
                  {"experts", t.model.experts},
                  {"top_k", t.model.top_k},
                  {"moe_layers", t.model.moe_layers}};
    j["fingerprint"] = t.fingerprint;
    j["imported_at"] = t.imported_at;
    if (!t.load_only) {
        std::vector<std::int64_t> lengths;
        std::int64_t sum = 0;
        std::set<std::string> groups;
        for (const auto& s : lib.samples(t.name)) {
            lengths.push_back(s.length);
            sum += s.length;
            if (!s.group.empty()) groups.insert(s.group);
        }
        if (!lengths.empty())
            j["length"] = {{"min", *std::min_element(lengths.begin(), lengths.end())},
                           {"mean", static_cast<double>(sum) / lengths.size()},
                           {"median", median(lengths)},
                           {"max", *std::max_element(lengths.begin(), lengths.end())},
                           {"total", sum}};
        j["groups"] = groups.size();
    }
    const auto totals = lib.layer_totals(t.name);
    const auto cv = layer_load_cv(totals, t.model.num_moe_layers(), t.model.experts);
    if (!cv.empty()) {
        j["layer_load_cv"] = {{"mean", std::accumulate(cv.begin(), cv.end(), 0.0) / cv.size()},
                              {"max", *std::max_element(cv.begin(), cv.end())}};
        if (detail) {
            nlohmann::json per = nlohmann::json::array();
            for (std::size_t l = 0; l < cv.size(); ++l)
                per.push_back({{"layer", t.model.moe_layers[l]}, {"cv", cv[l]}});
            j["layer_load_cv"]["per_layer"] = per;
        }
    }
    nlohmann::json wins = nlohmann::json::array();
    for (const auto& w : lib.windows(t.name))
        wins.push_back({{"name", w.name}, {"samples", w.samples}, {"definition", w.definition}});
    j["windows"] = wins;
    return j;
}

/// A name or other stored text as echoed on a terminal: one line, escapes for control
/// characters and invalid UTF-8, cut at 80 characters with "..." (the library keeps it whole).
std::string shown(const std::string& s) {
    return util::printable(s);
}
/// A path as echoed: escapes as shown(), never cut.
std::string shown_path(const std::string& s) {
    return util::printable(s, s.size());
}

void print_trace_text(const nlohmann::json& j, bool detail) {
    const auto text = [&j](const char* key) { return shown(j[key].get<std::string>()); };
    std::cout << "trace " << text("name") << "  (" << text("format")
              << (j["load_only"].get<bool>() ? ", load-only" : "") << ")\n";
    const auto& m = j["model"];
    std::cout << "  model     " << (m["name"].get<std::string>().empty() ? "-" : shown(m["name"].get<std::string>())) << ": "
              << m["moe_layers"].size() << " MoE layers ("
              << format_layer_list(m["moe_layers"].get<std::vector<int>>()) << " of "
              << m["num_hidden_layers"].get<int>() << "), " << m["experts"].get<int>() << " experts, top-"
              << m["top_k"].get<int>() << "\n";
    std::cout << "  samples   " << j["samples"].get<std::size_t>();
    if (j.contains("groups") && j["groups"].get<std::size_t>() > 0) std::cout << " in " << j["groups"] << " groups";
    std::cout << "\n";
    if (j.contains("length")) {
        const auto& l = j["length"];
        std::cout << "  length    min " << l["min"] << "  mean " << fmt("%.1f", l["mean"].get<double>()) << "  median "
                  << fmt("%.1f", l["median"].get<double>()) << "  max " << l["max"] << "  total " << l["total"]
                  << " tokens\n";
    }
    if (j.contains("layer_load_cv")) {
        const auto& c = j["layer_load_cv"];
        std::cout << "  load CV   mean " << fmt("%.3f", c["mean"].get<double>()) << "  max "
                  << fmt("%.3f", c["max"].get<double>()) << "  (per MoE layer, over experts)\n";
        if (detail && c.contains("per_layer")) {
            int n = 0;
            for (const auto& p : c["per_layer"]) {
                std::cout << (n % 8 == 0 ? "    " : "  ") << "L" << p["layer"].get<int>() << " "
                          << fmt("%.3f", p["cv"].get<double>());
                if (++n % 8 == 0) std::cout << "\n";
            }
            if (n % 8) std::cout << "\n";
        }
    }
    for (const auto& w : j["windows"])
        std::cout << "  window    " << shown(w["name"].get<std::string>()) << ": " << w["samples"] << " samples ("
                  << shown(w["definition"].get<std::string>()) << ")\n";
}


std::vector<std::string> split_list(const std::string& s) {
    std::vector<std::string> out;
    std::string cur;
    std::stringstream ss(s);
    while (std::getline(ss, cur, ','))
        if (!cur.empty()) out.push_back(cur);
    return out;
}

/// --db values: a file path. ":memory:" would open a library that vanishes at exit.
void check_db_path(const std::string& db) {
    if (db.empty() || db == ":memory:")
        throw InputError("--db must be a file path (got '" + util::printable(db) + "')");
}

/// Removes a library file this command created (and its -wal/-shm side files) when the command
/// failed: a failed import into a new path leaves nothing behind. Existing files are never touched.
class NewLibraryGuard {
public:
    explicit NewLibraryGuard(std::string db) : db_(std::move(db)) {
        std::error_code ec;
        existed_ = std::filesystem::exists(db_, ec) || ec;
        for (const char* side : {"-wal", "-shm"}) side_existed_.push_back(std::filesystem::exists(db_ + side, ec) || ec);
    }
    void commit() { done_ = true; }
    /// Call after the library connection is closed. Keeps the file should another process have
    /// imported into it meanwhile (it holds a trace).
    void cleanup() {
        if (done_ || existed_) return;
        try {
            if (!storage::Library::open(db_, storage::OpenMode::ReadOnly)->traces().empty()) return;
        } catch (const std::exception&) {
            // No readable library there (never created, no schema, damaged): remove what is ours.
        }
        std::error_code ec;
        std::filesystem::remove(db_, ec);
        const char* sides[] = {"-wal", "-shm"};
        for (std::size_t k = 0; k < 2; ++k)
            if (!side_existed_[k]) std::filesystem::remove(db_ + sides[k], ec);
    }

private:
    std::string db_;
    bool existed_ = true, done_ = false;
    std::vector<bool> side_existed_;
};

struct ImportCmd {
    std::string db, name, format = "auto";
    ModelFlags model;
    std::vector<std::string> paths;
    bool quiet = false;
};

int do_import(const ImportCmd& c) {
    check_db_path(c.db);
    ImportOptions opt;
    opt.format = parse_trace_format(c.format);
    opt.model = c.model.resolve();
    NewLibraryGuard guard(c.db);
    std::unique_ptr<storage::Library> lib;
    try {
        lib = storage::Library::open(c.db);
    } catch (...) {
        guard.cleanup();
        throw;
    }
    std::vector<std::filesystem::path> inputs(c.paths.begin(), c.paths.end());
    const bool tty = isatty(STDERR_FILENO) && !c.quiet;
    auto last = std::chrono::steady_clock::now();
    auto progress = [&](const ImportProgress& p) {
        if (!tty) return;
        const auto now = std::chrono::steady_clock::now();
        if (now - last < std::chrono::milliseconds(100) && p.files_done != p.files_total) return;
        last = now;
        std::fprintf(stderr, "\rimporting %zu/%zu files, %zu samples, %s", p.files_done, p.files_total, p.samples,
                     human_bytes(p.bytes_done).c_str());
        std::fflush(stderr);
    };
    std::signal(SIGINT, on_sigint);
    const auto t0 = std::chrono::steady_clock::now();
    ImportSummary s;
    try {
        s = lib->import_trace(c.name, inputs, opt, progress, &g_cancel);
    } catch (...) {
        if (tty) std::fputs("\n", stderr);
        lib.reset();      // close (and let SQLite remove its side files) before cleaning up
        guard.cleanup();  // a library created by this failed import is removed again
        throw;
    }
    guard.commit();
    if (tty) std::fputs("\n", stderr);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::cout << "imported trace '" << shown(c.name) << "' into " << shown_path(c.db) << ": " << s.samples << " samples from " << s.files
              << " files (" << human_bytes(s.bytes) << ", format " << to_string(s.format) << ") in "
              << fmt("%.2f", secs) << " s\n";
    const auto& m = s.model;
    std::cout << "  model    " << (m.name.empty() ? "-" : shown(m.name)) << ": " << m.num_moe_layers() << " MoE layers ("
              << format_layer_list(m.moe_layers) << " of " << m.num_hidden_layers << "), " << m.experts
              << " experts, top-" << m.top_k << "\n";
    if (s.samples > 0) {
        const auto samples = lib->samples(c.name);
        std::set<std::string> rules;
        for (const auto& x : samples) rules.insert(to_string(x.length_rule));
        std::string r;
        for (const auto& x : rules) r += (r.empty() ? "" : ", ") + x;
        std::cout << "  lengths  min " << s.min_length << "  mean " << fmt("%.1f", s.mean_length) << "  max "
                  << s.max_length << " tokens (t_i rule: " << r << ")\n";
    }
    std::cout << "  missing routes " << s.missing_routes << "\n";
    for (const auto& n : s.notes) std::cout << "  note: " << util::printable(n, 400) << "\n";
    return 0;
}

struct WindowCmd {
    std::string db, trace, name, ids_file, groups;
    std::int64_t first = 0, random = 0, split = 0, split_groups = 0;
    std::string seed_text;  ///< parsed by do_window: 0..2^64-1, never a wrapped negative
    bool ids_given = false, first_given = false, random_given = false, seed_given = false, groups_given = false;
    bool split_given = false, split_groups_given = false;
};

/// `window --split N` / `--split-groups G`: consecutive windows named <name>-000, <name>-001, ... (at
/// least three digits, more when needed) in run order. Every name is checked before any window is
/// created, so a clash changes nothing.
int do_window_split(const WindowCmd& c) {
    if (c.name.empty()) throw InputError("window: --name must not be empty (it prefixes the split windows' names)");
    if (c.split_given && c.split < 1) throw InputError("window: --split must be >= 1 (got " + std::to_string(c.split) + ")");
    if (c.split_groups_given && c.split_groups < 1)
        throw InputError("window: --split-groups must be >= 1 (got " + std::to_string(c.split_groups) + ")");
    auto lib = storage::Library::open(c.db, storage::OpenMode::ReadWrite);
    if (lib->trace(c.trace).load_only)
        throw InputError("window: trace '" + util::printable(c.trace) +
                         "' is load-only (per-layer expert totals, no samples): windows need samples");
    const auto samples = lib->samples(c.trace);
    const std::vector<WindowSelection> parts =
        c.split_given ? split_consecutive(samples, static_cast<std::size_t>(c.split), c.trace)
                      : split_groups(samples, static_cast<std::size_t>(c.split_groups), c.trace);
    const std::size_t digits = std::max<std::size_t>(3, std::to_string(parts.size() - 1).size());
    std::vector<std::string> names;
    std::set<std::string> taken;
    for (const auto& w : lib->windows(c.trace)) taken.insert(w.name);
    for (std::size_t k = 0; k < parts.size(); ++k) {
        std::string num = std::to_string(k);
        names.push_back(c.name + "-" + std::string(digits - num.size(), '0') + num);
        if (taken.count(names.back()))
            throw InputError("window: trace '" + util::printable(c.trace) + "' already has a window named '" +
                             util::printable(names.back()) + "' (no window was created)");
    }
    std::vector<storage::Library::WindowSpec> specs;
    for (std::size_t k = 0; k < parts.size(); ++k) specs.push_back({names[k], parts[k].ids, parts[k].definition});
    const auto created = lib->create_windows(c.trace, specs);  // one transaction: all windows or none
    for (std::size_t k = 0; k < created.size(); ++k)
        std::cout << "window '" << created[k].name << "' of trace '" << c.trace << "': " << created[k].samples
                  << " samples (" << parts[k].definition << ")\n";
    return 0;
}

/// --seed of `command` as an unsigned 64-bit integer; InputError for anything else (a negative
/// number, or one above 2^64-1, included: never wrapped).
std::uint64_t parse_seed(const std::string& text, const std::string& command = "window") {
    std::uint64_t v = 0;
    const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (text.empty() || ec != std::errc() || p != text.data() + text.size())
        throw InputError(command + ": --seed must be an integer in 0..18446744073709551615 (got '" +
                         util::printable(text) + "')");
    return v;
}

int do_window(const WindowCmd& c) {
    check_db_path(c.db);
    const int modes = c.ids_given + c.first_given + c.random_given + c.groups_given + c.split_given + c.split_groups_given;
    if (modes != 1)
        throw InputError("window: give exactly one of --ids FILE, --first N, --random N --seed S, --groups LIST, "
                         "--split N, --split-groups G");
    if (c.split_given || c.split_groups_given) return do_window_split(c);
    if (c.first_given && c.first < 1) throw InputError("window: --first must be >= 1 (got " + std::to_string(c.first) + ")");
    if (c.random_given && c.random < 1)
        throw InputError("window: --random must be >= 1 (got " + std::to_string(c.random) + ")");
    if (c.random_given && !c.seed_given) throw InputError("window: --random needs --seed S (plans must be reproducible)");
    const std::uint64_t seed = c.seed_given ? parse_seed(c.seed_text) : 0;
    const std::size_t first = static_cast<std::size_t>(c.first), random = static_cast<std::size_t>(c.random);
    std::vector<std::string> ids;
    if (c.ids_given) {
        // Read the list before touching the library: a bad list changes nothing.
        std::istringstream in(read_input_file(c.ids_file, input_files::kIdList));
        std::string line;
        bool first_line = true;
        while (std::getline(in, line)) {
            if (first_line && line.rfind("\xEF\xBB\xBF", 0) == 0) line.erase(0, 3);  // UTF-8 BOM
            first_line = false;
            const auto is_space = [](char ch) { return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\v' || ch == '\f'; };
            std::size_t b = 0, e = line.size();
            while (b < e && is_space(line[b])) ++b;
            while (e > b && is_space(line[e - 1])) --e;
            if (b == e || line[b] == '#') continue;
            ids.push_back(line.substr(b, e - b));
        }
        if (ids.empty()) throw InputError(c.ids_file + ": no sample ids");
    }
    auto lib = storage::Library::open(c.db, storage::OpenMode::ReadWrite);
    const auto samples = lib->samples(c.trace);
    std::string definition;
    if (c.ids_given) {
        definition = "ids from " + c.ids_file;
    } else {
        // The selection rules live in core/model/window_select.h (shared with the studio).
        WindowSelection sel = c.first_given    ? select_first(samples, first, c.trace)
                              : c.random_given ? select_random(samples, random, seed, c.trace)
                                               : select_groups(samples, split_list(c.groups), c.trace);
        ids = std::move(sel.ids);
        definition = std::move(sel.definition);
        if (c.groups_given) definition = "groups " + c.groups;
    }
    const auto w = lib->create_window(c.trace, c.name, ids, definition);
    std::cout << "window '" << shown(w.name) << "' of trace '" << shown(c.trace) << "': " << w.samples << " samples ("
              << shown(definition) << ")\n";
    return 0;
}

struct SynthCmd {
    std::string out, format = "vllm";
    SynthConfig cfg;
};

int do_synth(const SynthCmd& c) {
    const TraceFormat f = parse_trace_format(c.format);
    const auto files = write_synth(c.cfg, f, c.out);
    const auto m = synth_model(c.cfg);
    std::cout << "wrote synthetic trace (" << c.cfg.groups * c.cfg.group_size << " samples in " << c.cfg.groups
              << " groups, format " << to_string(f) << ", seed " << c.cfg.seed << ") to " << c.out << ": "
              << files.size() << " files\n";
    std::cout << "  model    synthetic: " << m.num_moe_layers() << " MoE layers (" << format_layer_list(m.moe_layers)
              << " of " << m.num_hidden_layers << "), " << m.experts << " experts, top-" << m.top_k << "\n";
    std::cout << "  import with: routepack import --db DB --name NAME --experts " << m.experts << " --top-k " << m.top_k
              << " --layers " << m.num_hidden_layers << " --moe-layers " << format_layer_list(m.moe_layers) << " "
              << c.out << "\n";
    return 0;
}

struct SynthCheckpointCmd {
    std::string out, model, check;
    gpu::SynthCheckpointConfig cfg;
};

int do_synth_checkpoint(SynthCheckpointCmd c) {
    if (c.out.empty() == c.check.empty()) throw InputError("synth-checkpoint: give exactly one of --out DIR and --check DIR");
    if (!c.check.empty()) {
        const gpu::SynthSlotCheck r = gpu::check_synth_checkpoint(c.check);
        std::cout << c.check << ": " << r.tensors << " routed-expert tensors checked: every slot holds the expected "
                  << "logical expert (" << r.order << " order"
                  << (r.placement.empty() ? std::string() : ", placement " + r.placement) << ")\n";
        return 0;
    }
    if (!c.model.empty()) c.cfg.model = known_model(c.model);
    gpu::write_synth_checkpoint(c.cfg, c.out);
    const auto index = gpu::read_index(c.out);
    std::cout << "wrote synthetic checkpoint (" << (c.cfg.model.name.empty() ? std::string("model") : c.cfg.model.name)
              << ", " << c.cfg.dtype << ", hidden " << c.cfg.hidden << ") to " << c.out << ": "
              << index.shards().size() << " shards, " << index.weight_map.size() << " tensors, "
              << index.total_size.value_or(0) << " bytes, " << c.cfg.model.experts << " experts x "
              << c.cfg.model.num_moe_layers() << " MoE layers (" << format_layer_list(c.cfg.model.moe_layers)
              << " of " << c.cfg.model.num_hidden_layers << ")\n";
    return 0;
}

void print_comparison(const PlanResult& r);

struct DemoCmd {
    std::string out = "routepack-demo";
};

/// The main job on the embedded demo input (storage/demo.h, shared with the studio): synthesize a
/// GRPO window, import it into a fresh library, define the window, plan it, save the run and write
/// plan.json; then print what the library holds and the comparison.
int do_demo(const DemoCmd& c) {
    const storage::DemoBuild d = storage::build_demo(c.out);
    std::cout << "demo: wrote " << d.trace_files.size() << " synthetic vLLM response files (" << d.config.groups
              << " GRPO groups x " << d.config.group_size << " rollouts) to " << d.traces.string() << "\n";
    std::cout << "demo: imported " << d.import.samples << " samples into " << d.library.string() << "\n";
    auto lib = storage::Library::open(d.library, storage::OpenMode::ReadOnly);
    print_trace_text(trace_json(*lib, lib->trace(storage::kDemoTrace), true), true);
    print_comparison(d.plan);
    std::cout << "demo: plan written to " << d.plan_file.string() << "\n";
    std::cout << "demo: devices: " << gpu::query_devices().description << "\n";
    return 0;
}


std::string read_text(const std::string& path, const InputFileKind& kind) {
    return read_input_file(path, kind);
}

/// Inputs shared by plan, compare and validate: a library window, or trace files read straight.
struct WindowSource {
    std::string db, trace, window, format = "auto";
    std::vector<std::string> inputs;
    ModelFlags model;

    void add(CLI::App& app, bool window_flag = true) {
        app.add_option("--db", db, "library file");
        app.add_option("--trace", trace, "trace name in the library");
        if (window_flag) app.add_option("--window", window, "window name (default: the whole trace)");
        app.add_option("--input", inputs, "trace files or folders read straight (no library)");
        app.add_option("--format", format, "format of --input (default auto)");
        model.add(app);
    }
    bool given() const { return !db.empty() || !inputs.empty(); }

    /// Loads the window; `ids` (when non-empty) selects and orders samples by id.
    Trace load(std::string* trace_name, std::string* window_name, const std::vector<std::string>& ids = {}) const {
        if (!db.empty() && !inputs.empty()) throw InputError("give either --db or --input, not both");
        if (!db.empty()) {
            if (trace.empty()) throw InputError("--db needs --trace NAME");
            auto lib = storage::Library::open(db, storage::OpenMode::ReadOnly);
            *trace_name = trace;
            *window_name = window;
            if (!ids.empty()) return lib->load_samples(trace, ids);
            if (!window.empty()) return lib->load_window(trace, window);
            return lib->load_trace(trace);
        }
        if (inputs.empty()) throw InputError("give the window: --db DB --trace NAME [--window W], or --input PATH...");
        ImportOptions opt;
        opt.format = parse_trace_format(format);
        opt.model = model.resolve();
        std::vector<std::filesystem::path> paths(inputs.begin(), inputs.end());
        Trace t = import_trace_to_memory(paths, opt);
        *trace_name = inputs.size() == 1 ? std::filesystem::path(inputs[0]).filename().string() : "inputs";
        *window_name = "";
        if (ids.empty()) return t;
        std::unordered_map<std::string, std::size_t> at;
        for (std::size_t i = 0; i < t.size(); ++i) at.emplace(t.samples[i].id, i);
        Trace sel;
        sel.model = t.model;
        sel.format = t.format;
        for (const auto& id : ids) {
            auto it = at.find(id);
            if (it == at.end()) throw InputError("the inputs have no sample '" + id + "'");
            SampleRecord r;
            r.info = t.samples[it->second];
            auto c = t.sample_counts(it->second);
            r.counts.assign(c.begin(), c.end());
            sel.append(std::move(r));
        }
        return sel;
    }
};

struct PlanCmd {
    std::string command;  ///< "plan" or "compare", for messages
    WindowSource src;
    std::string topology, out;
    std::string seed_text;  ///< --seed, parsed by run_planner (0..2^64-1, never wrapped)
    PlannerBudgets budgets;
    bool json = false;
    bool quiet = false;
};

void add_budget_flags(CLI::App& app, PlanCmd& c) {
    auto& b = c.budgets;
    app.add_option("--topology", c.topology, "topology JSON file (ep_ranks, dp_slots, edp_shards, token_cap, attention_stages) or a shipped name (" + [] {
        std::string s;
        for (const auto& n : known_topology_names()) s += (s.empty() ? "" : ", ") + n;
        return s;
    }() + ")")
        ->required();
    app.add_option("--seed", c.seed_text, "random seed, 0..2^64-1 (same inputs + seed + threads => same plan)");
    app.add_option("--threads", b.workers, "worker threads (default: all cores)");
    app.add_option("--time-limit", b.time_limit_s, "wall-clock limit in seconds (recorded when it fires)");
    app.add_option("--seeds", b.seeding.candidates, "M: fixed-row seed candidates");
    app.add_option("--population", b.seeding.population, "P_pop: annealing chains");
    app.add_option("--choice-width", b.seeding.choice_width, "w: seeding choice width");
    app.add_option("--eta", b.seeding.eta, "diversity weight");
    app.add_option("--levels", b.annealing.levels, "N_T: temperature levels");
    app.add_option("--steps", b.annealing.steps, "K: proposals per chain per level");
    app.add_option("--t0", b.annealing.t0, "T_0 on the normalized energy delta");
    app.add_option("--cooling", b.annealing.cooling, "geometric cooling factor");
    app.add_option("--p-guide", b.annealing.p_guide, "probability of a guided proposal");
    app.add_option("--rho", b.annealing.rho, "relocation probability");
    app.add_option("--p-straggler", b.annealing.p_straggler,
                   "share of guided proposals aimed at the straggler EDP shard");
    app.add_option("--row-nodes", b.row_nodes, "node budget of the exact row-count search");
    app.add_option("--polish", b.polish_evaluations,
                   "scored moves of the final exact improvement pass on the straggler shard (0 = none)");
}

std::string pct(double from, double to) {
    if (from == 0) return to == 0 ? "+0.00%" : "n/a";
    return fmt("%+.2f%%", 100.0 * (to - from) / from);
}

nlohmann::json compare_json(const PlanResult& r) {
    nlohmann::json j;
    j["trace"] = r.trace_name;
    j["window"] = r.window_name;
    j["samples"] = r.samples.size();
    j["row_count"] = r.rows.rows;
    j["row_count_certified"] = r.rows.certified;
    j["row_lower_bound"] = r.rows.lower_bound;
    nlohmann::json methods;
    for (const MethodResult* m : {&r.baseline, &r.reorder, &r.karmarkar_karp, &r.routepack}) {
        const auto& x = m->metrics;
        methods[m->name] = {{"placement", m->lpt ? "lpt" : "identity"},
                            {"score", {x.score.max_u, x.score.sum_u, x.score.max_j}},
                            {"cv_global", x.cv_global},
                            {"ep_peak_sum", x.ep_peak_sum},
                            {"ep_tail_peak", x.ep_tail_peak},
                            {"ep_balance_efficiency", x.ep_balance_efficiency},
                            {"attention_sum", x.attention_sum},
                            {"joint", x.joint},
                            {"cap_violations", x.cap_violations},
                            {"empty_cells", x.empty_cells}};
    }
    j["methods"] = methods;
    auto change = [](const LayoutMetrics& a, const LayoutMetrics& b) {
        auto rel = [](double x, double y) { return x == 0 ? 0.0 : 100.0 * (y - x) / x; };
        return nlohmann::json{{"joint_pct", rel(a.joint, b.joint)},
                              {"ep_peak_sum_pct", rel(double(a.ep_peak_sum), double(b.ep_peak_sum))},
                              {"ep_tail_peak_pct", rel(double(a.ep_tail_peak), double(b.ep_tail_peak))},
                              {"ep_balance_efficiency", {a.ep_balance_efficiency, b.ep_balance_efficiency}},
                              {"attention_pct", rel(a.attention_sum, b.attention_sum)}};
    };
    j["max_u_lower_bound"] = {{"value", r.bound.value},
                              {"mean", r.bound.mean},
                              {"sample", r.bound.sample},
                              {"gap", bound_gap(r.routepack.metrics.score.max_u, r.bound.value)}};
    j["routepack_vs_reorder"] = change(r.reorder.metrics, r.routepack.metrics);
    j["routepack_vs_baseline"] = change(r.baseline.metrics, r.routepack.metrics);
    j["routepack_vs_karmarkar_karp"] = change(r.karmarkar_karp.metrics, r.routepack.metrics);
    j["planner"] = {{"seconds", r.timings.count("total") ? r.timings.at("total") : 0.0},
                    {"proposals", r.proposals},
                    {"cancelled", r.cancelled},
                    {"time_limit_hit", r.time_limit_hit}};
    return j;
}

void print_comparison(const PlanResult& r) {
    const auto& t = r.topology;
    std::cout << "window " << (r.window_name.empty() ? std::string("(whole trace)") : "'" + shown(r.window_name) + "'")
              << " of '" << shown(r.trace_name) << "': " << r.samples.size() << " samples; " << t.ep_ranks << " EP ranks, "
              << t.dp_slots << " DP slots in " << t.shards() << " EDP shards, cap C = " << t.token_cap << "\n";
    std::cout << "rows: " << r.rows.how << "; lower bound " << r.rows.lower_bound << "\n";
    if (r.baseline_not_ffd)
        std::cout << "note: FixedRowFFD cannot fill R* rows; baseline and reorder use the row-count search's layout\n";
    std::cout << "CV_global: identity " << fmt("%.4f", r.cv_identity) << " -> LPT " << fmt("%.4f", r.cv_lpt) << "\n";
    std::printf("%-15s %9s %12s %12s %10s %12s %10s %8s %12s %5s\n", "method", "placement", "max_g U", "sum_g U",
                "max J", "S_EP", "T_EP", "eta_EP", "attention", "cap!");
    for (const MethodResult* m : {&r.baseline, &r.reorder, &r.karmarkar_karp, &r.routepack}) {
        const auto& x = m->metrics;
        std::printf("%-15s %9s %12.4f %12.4f %10.4f %12lld %10lld %8.4f %12.4f %5d\n", m->name.c_str(),
                    m->lpt ? "lpt" : "identity", x.score.max_u, x.score.sum_u, x.score.max_j,
                    static_cast<long long>(x.ep_peak_sum), static_cast<long long>(x.ep_tail_peak),
                    x.ep_balance_efficiency, x.attention_sum, x.cap_violations + x.empty_cells);
    }
    std::fflush(stdout);
    auto line = [&](const char* label, const LayoutMetrics& a, const LayoutMetrics& b) {
        std::cout << label << ": joint " << pct(a.joint, b.joint) << "  S_EP " << pct(double(a.ep_peak_sum), double(b.ep_peak_sum))
                  << "  T_EP " << pct(double(a.ep_tail_peak), double(b.ep_tail_peak)) << "  eta_EP "
                  << fmt("%.3f", a.ep_balance_efficiency) << " -> " << fmt("%.3f", b.ep_balance_efficiency)
                  << "  attention " << pct(a.attention_sum, b.attention_sum) << "\n";
    };
    std::cout << "lower bound on max_g U: " << fmt("%.4f", r.bound.value) << " (mean bound " << fmt("%.4f", r.bound.mean)
              << ", largest sample " << fmt("%.4f", r.bound.sample) << "); routepack is "
              << fmt("%.2f%%", 100.0 * bound_gap(r.routepack.metrics.score.max_u, r.bound.value)) << " above it\n";
    line("routepack vs reorder       ", r.reorder.metrics, r.routepack.metrics);
    line("routepack vs baseline      ", r.baseline.metrics, r.routepack.metrics);
    line("routepack vs karmarkar_karp", r.karmarkar_karp.metrics, r.routepack.metrics);
    if (r.karmarkar_karp.metrics.cap_violations > 0)
        std::cout << "note: karmarkar_karp puts " << r.karmarkar_karp.metrics.cap_violations
                  << " cell(s) over the cap C (reported, still scored)\n";
    std::cout << "planner: " << fmt("%.3f", r.timings.count("total") ? r.timings.at("total") : 0.0) << " s, "
              << r.proposals << " proposals, " << r.accepted << " accepted, polish " << r.polish_improvements << "/"
              << r.polish_evaluations << (r.polish_local_optimum ? " (local optimum)" : "")
              << (r.cancelled ? ", CANCELLED (best valid plan so far)" : "")
              << (r.time_limit_hit ? ", time limit hit" : "") << "\n";
}

PlanResult run_planner(const PlanCmd& c) {
    PlannerBudgets budgets = c.budgets;
    if (!c.seed_text.empty()) budgets.seed = parse_seed(c.seed_text, c.command);
    check_planner_budgets(budgets, c.command, BudgetNames::Flags);  // before anything is read
    PlanInput in;
    // The topology first: a file or a shipped name (resources/topologies), small and quick to refuse.
    in.topology = load_topology(c.topology);
    in.window = c.src.load(&in.trace_name, &in.window_name);
    in.budgets = budgets;
    std::signal(SIGINT, on_sigint);
    const bool tty = isatty(STDERR_FILENO) && !c.quiet;
    return plan_window(in, [&](const PlanEvent& e) {
        if (!tty) return;
        std::fprintf(stderr, "\r%-10s %3.0f%%", e.stage.c_str(), 100 * e.fraction);
        if (e.stage == "done") std::fputs("\n", stderr);
        std::fflush(stderr);
    }, &g_cancel);
}

/// Refuses an output path that is a folder (or another non-file), before any work is done.
void check_output_file(const std::string& out, const char* flag) {
    std::error_code ec;
    const auto st = std::filesystem::status(out, ec);
    if (std::filesystem::is_directory(st)) throw InputError(out + ": is a folder (" + flag + " names the file to write)");
    if (std::filesystem::exists(st) && !std::filesystem::is_regular_file(st))
        throw InputError(out + ": not a regular file (" + flag + " names the file to write)");
}

/// Writes `text` + "\n" to `out` atomically (util::write_file_atomically); InputError "<out>: cannot
/// write <what> (<step>: <reason>)" when that fails.
void write_output(const std::string& out, const std::string& text, const char* what) {
    try {
        util::write_file_atomically(out, text + "\n");
    } catch (const util::AtomicWriteError& e) {
        throw InputError(out + ": cannot write " + what + " (" + e.what() + ")");
    }
}

int do_plan(const PlanCmd& c, bool write) {
    if (write && c.out.empty()) throw InputError("plan: --out PLAN.json is required");
    if (write) check_output_file(c.out, "--out");
    const PlanResult r = run_planner(c);
    if (write) write_output(c.out, plan_to_json(r), "plan");
    if (c.json) {
        std::cout << compare_json(r).dump(2) << "\n";
    } else {
        print_comparison(r);
        if (write) std::cout << "plan written to " << c.out << "\n";
    }
    return r.cancelled ? 130 : 0;
}

/// `routepack sweep`: every window of a trace (a whole training run, e.g. from `window --split`)
/// planned on one topology with the same budgets and seed.
struct SweepCmd {
    PlanCmd plan;                ///< topology, budgets, --seed, --threads, --json, --quiet
    std::string db, trace, windows = "*", out;
    bool out_given = false;
    std::int64_t expert_bytes = 0;  ///< bytes one expert's parameters + optimizer state take per replica
};

/// One window's line of the sweep table.
struct SweepRow {
    std::string window;
    PlanResult plan;
    std::int64_t run_id = 0;
    std::int64_t churn = -1;  ///< slots whose expert changes against the previous window (-1: first window)
};

/// Plans the windows matching `--windows` (a shell pattern, default every window) in natural name
/// order. The windows run in parallel on a oneTBB arena of --threads workers (0 = all cores), one
/// planner worker each, so every plan is the one `routepack plan --threads 1` gives for that window
/// and seed. Each finished plan is saved as a run of its window; churn is placement_moves(next,
/// previous) summed over MoE layers, bytes = churn x --expert-bytes. Output: one line per window (or
/// --json), and with --out DIR: DIR/sweep.csv, DIR/sweep.json and one DIR/<window>.plan.json per
/// window (the name reduced to [A-Za-z0-9._-], recorded as plan_file).
int do_sweep(const SweepCmd& c) {
    PlannerBudgets budgets = c.plan.budgets;
    if (!c.plan.seed_text.empty()) budgets.seed = parse_seed(c.plan.seed_text, "sweep");
    check_planner_budgets(budgets, "sweep", BudgetNames::Flags);
    // One expert's state is far below 1 TiB; with at most 2^22 slots per placement the churn in bytes
    // then fits 64 bits.
    if (c.expert_bytes < 0 || c.expert_bytes > (std::int64_t(1) << 40))
        throw InputError("sweep: --expert-bytes must be in 0..1099511627776 (1 TiB; got " +
                         std::to_string(c.expert_bytes) + ")");
    if (c.out_given && c.out.empty()) throw InputError("sweep: --out must name a folder (got '')");
    check_db_path(c.db);
    if (!c.out.empty()) {
        std::error_code ec;
        const auto st = std::filesystem::status(c.out, ec);
        if (std::filesystem::exists(st) && !std::filesystem::is_directory(st))
            throw InputError(c.out + ": is not a folder (--out names the folder to write the sweep into)");
    }
    const Topology topology = load_topology(c.plan.topology);
    auto lib = storage::Library::open(c.db, storage::OpenMode::ReadWrite);
    if (lib->trace(c.trace).load_only)  // an unknown trace is refused by name
        throw InputError("sweep: trace '" + util::printable(c.trace) +
                         "' is load-only (per-layer expert totals, no samples): sweeps need windows of samples");
    std::vector<std::string> names;
    for (const auto& w : lib->windows(c.trace))
        if (fnmatch(c.windows.c_str(), w.name.c_str(), 0) == 0) names.push_back(w.name);
    std::sort(names.begin(), names.end(), natural_less);
    if (names.empty())
        throw InputError("sweep: trace '" + util::printable(c.trace) + "' has no window matching '" +
                         util::printable(c.windows) + "'");
    // Window names are free text: their plan files keep [A-Za-z0-9._-] only (no separators, no
    // leading dot), so every plan lands inside --out; clashes get the window's position appended.
    std::vector<std::string> plan_files(names.size());
    std::set<std::string> used;
    for (std::size_t k = 0; k < names.size(); ++k) {
        std::string stem;
        for (unsigned char ch : names[k])
            stem += (std::isalnum(ch) || ch == '-' || ch == '_' || ch == '.') ? static_cast<char>(ch) : '_';
        if (stem.size() > 120) stem.resize(120);
        if (stem.empty() || stem[0] == '.') stem = "_" + stem;
        if (!used.insert(stem).second) stem += "-" + std::to_string(k);
        used.insert(stem);
        plan_files[k] = stem + ".plan.json";
    }
    for (const auto& n : names) {
        try {
            (void)nlohmann::json(n).dump();
        } catch (const nlohmann::json::exception&) {
            throw InputError("sweep: window '" + util::printable(n) + "' of trace '" + util::printable(c.trace) +
                             "' has a name that is not valid UTF-8 (plans and tables are JSON); nothing was planned");
        }
    }
    if (!c.out.empty()) {
        // The folder and every target are checked before planning: a sweep that cannot write saves nothing.
        std::error_code ec;
        std::filesystem::create_directories(c.out, ec);
        if (ec || !std::filesystem::is_directory(c.out))
            throw InputError(c.out + ": cannot create the sweep folder (" + (ec ? ec.message() : "not a folder") + ")");
        std::vector<std::string> targets = plan_files;
        targets.push_back("sweep.csv");
        targets.push_back("sweep.json");
        for (const auto& t : targets) {
            const auto st = std::filesystem::symlink_status(std::filesystem::path(c.out) / t, ec);
            if (std::filesystem::exists(st) && !std::filesystem::is_regular_file(st))
                throw InputError((std::filesystem::path(c.out) / t).string() +
                                 ": exists and is not a regular file; nothing was planned");
        }
        if (access(c.out.c_str(), W_OK) != 0) throw InputError(c.out + ": folder is not writable; nothing was planned");
    }
    std::vector<PlanInput> inputs(names.size());
    for (std::size_t k = 0; k < names.size(); ++k) {
        inputs[k].window = lib->load_window(c.trace, names[k]);
        inputs[k].trace_name = c.trace;
        inputs[k].window_name = names[k];
        inputs[k].topology = topology;
        inputs[k].budgets = budgets;
        inputs[k].budgets.workers = 1;
    }
    std::signal(SIGINT, on_sigint);
    std::vector<SweepRow> rows(names.size());
    std::vector<std::string> errors(names.size());
    const int arena_workers = budgets.workers > 0 ? budgets.workers : tbb::this_task_arena::max_concurrency();
    tbb::task_arena arena(arena_workers);
    std::atomic<std::size_t> done{0};
    const bool tty = isatty(STDERR_FILENO) && !c.plan.quiet;
    arena.execute([&] {
        tbb::parallel_for(std::size_t{0}, names.size(), [&](std::size_t k) {
            rows[k].window = names[k];
            if (g_cancel.load()) return;  // interrupted: the windows not yet started are not planned
            try {
                rows[k].plan = plan_window(inputs[k], {}, &g_cancel);
            } catch (const std::exception& e) {
                errors[k] = e.what();
            }
            const std::size_t n = ++done;
            if (tty) std::fprintf(stderr, "\rsweep %zu/%zu windows", n, names.size());
        });
    });
    if (tty) std::fputs("\n", stderr);
    if (g_cancel.load()) {
        // A sweep is a table of finished plans: an interrupted one keeps nothing rather than mixing
        // best-so-far plans into it.
        std::cerr << "routepack: sweep interrupted: no run was saved and nothing was written\n";
        return 130;
    }
    for (std::size_t k = 0; k < names.size(); ++k)
        if (!errors[k].empty()) throw InputError("sweep: window '" + util::printable(names[k]) + "': " + errors[k]);
    for (std::size_t k = 0; k < rows.size(); ++k) {
        rows[k].run_id = lib->save_run(rows[k].plan, c.plan.topology).id;
        if (k > 0) {
            rows[k].churn = 0;
            for (const auto& layer : placement_moves(rows[k].plan.lpt, rows[k - 1].plan.lpt))
                rows[k].churn += static_cast<std::int64_t>(layer.size());
        }
    }

    // RFC 4180 field: quoted (quotes doubled) when it holds a comma, quote, CR or LF.
    auto csv_field = [](const std::string& v) {
        if (v.find_first_of(",\"\r\n") == std::string::npos) return v;
        std::string out = "\"";
        for (char ch : v) out += ch == '"' ? std::string("\"\"") : std::string(1, ch);
        return out + "\"";
    };
    auto gain = [](double base, double x) { return base > 0 ? 100.0 * (x - base) / base : 0.0; };
    nlohmann::json j = nlohmann::json::array();
    std::ostringstream csv;
    csv << "window,samples,rows,certified,baseline,reorder,karmarkar_karp,routepack,routepack_vs_baseline_pct,"
           "routepack_vs_reorder_pct,lower_bound,planner_s,churn_slots,churn_bytes,run\r\n";
    for (const auto& r : rows) {
        const PlanResult& p = r.plan;
        const double base = p.baseline.metrics.score.max_u, rp = p.routepack.metrics.score.max_u;
        nlohmann::json o = {{"window", r.window},
                            {"samples", p.samples.size()},
                            {"rows", p.rows.rows},
                            {"certified", p.rows.certified},
                            {"baseline", base},
                            {"reorder", p.reorder.metrics.score.max_u},
                            {"karmarkar_karp", p.karmarkar_karp.metrics.score.max_u},
                            {"routepack", rp},
                            {"routepack_vs_baseline_pct", gain(base, rp)},
                            {"routepack_vs_reorder_pct", gain(p.reorder.metrics.score.max_u, rp)},
                            {"lower_bound", p.bound.value},
                            {"planner_s", p.timings.count("total") ? p.timings.at("total") : 0.0},
                            {"run", r.run_id},
                            {"plan_file", c.out.empty() ? std::string() : plan_files[j.size()]}};
        if (r.churn >= 0) {
            o["churn_slots"] = r.churn;
            o["churn_bytes"] = c.expert_bytes > 0 ? nlohmann::json(r.churn * c.expert_bytes) : nlohmann::json(nullptr);
        } else {
            o["churn_slots"] = nullptr;
            o["churn_bytes"] = nullptr;
        }
        j.push_back(o);
        csv << csv_field(r.window) << "," << p.samples.size() << "," << p.rows.rows << "," << (p.rows.certified ? 1 : 0) << ","
            << fmt("%.17g", base) << "," << fmt("%.17g", p.reorder.metrics.score.max_u) << ","
            << fmt("%.17g", p.karmarkar_karp.metrics.score.max_u) << "," << fmt("%.17g", rp) << ","
            << fmt("%.6f", gain(base, rp)) << "," << fmt("%.6f", gain(p.reorder.metrics.score.max_u, rp)) << ","
            << fmt("%.17g", p.bound.value) << "," << fmt("%.6f", o["planner_s"].get<double>()) << ","
            << (r.churn >= 0 ? std::to_string(r.churn) : "") << ","
            << (r.churn >= 0 && c.expert_bytes > 0 ? std::to_string(r.churn * c.expert_bytes) : "") << ","
            << r.run_id << "\r\n";
    }
    if (!c.out.empty()) {
        const std::filesystem::path dir(c.out);
        write_output((dir / "sweep.json").string(), j.dump(2), "sweep table");
        std::string text = csv.str();
        text.pop_back();  // write_output adds the last line end
        text.pop_back();
        write_output((dir / "sweep.csv").string(), text + "\r", "sweep table");
        for (std::size_t k = 0; k < rows.size(); ++k)
            write_output((dir / plan_files[k]).string(), plan_to_json(rows[k].plan), "plan");
    }
    if (c.plan.json) {
        std::cout << j.dump(2) << "\n";
    } else {
        std::cout << fmt_line("%-16s %7s %4s %11s %11s %11s %11s %9s %8s %7s", "window", "samples", "rows", "baseline",
                         "reorder", "kk", "routepack", "vs base", "time_s", "churn")
                  << (c.expert_bytes > 0 ? "  churn bytes" : "") << "\n";
        double sum_gain = 0;
        for (const auto& o : j) {
            sum_gain += o["routepack_vs_baseline_pct"].get<double>();
            std::cout << fmt_line("%-16s %7zu %4d %11.4f %11.4f %11.4f %11.4f %+8.2f%% %8.3f %7s",
                             util::printable(o["window"].get<std::string>()).c_str(), o["samples"].get<std::size_t>(),
                             o["rows"].get<int>(), o["baseline"].get<double>(), o["reorder"].get<double>(),
                             o["karmarkar_karp"].get<double>(), o["routepack"].get<double>(),
                             o["routepack_vs_baseline_pct"].get<double>(), o["planner_s"].get<double>(),
                             o["churn_slots"].is_null() ? "-" : std::to_string(o["churn_slots"].get<std::int64_t>()).c_str())
                      << (c.expert_bytes > 0 && !o["churn_bytes"].is_null()
                              ? "  " + std::to_string(o["churn_bytes"].get<std::int64_t>())
                              : std::string())
                      << "\n";
        }
        std::cout << "sweep: " << rows.size() << " windows of trace '" << util::printable(c.trace)
                  << "' planned and saved as runs " << rows.front().run_id << ".." << rows.back().run_id
                  << "; mean routepack vs baseline " << fmt("%+.2f%%", sum_gain / static_cast<double>(rows.size()))
                  << (c.out.empty() ? std::string() : "; written to " + c.out) << "\n";
    }
    bool cancelled = false;
    for (const auto& r : rows) cancelled = cancelled || r.plan.cancelled;
    return cancelled ? 130 : 0;
}

struct ValidateCmd {
    std::string plan;
    WindowSource src;
};

int do_validate(const ValidateCmd& c) {
    const PlanFile f = parse_plan(read_text(c.plan, input_files::kPlan), c.plan);
    std::cout << c.plan << ": structure valid: " << f.sample_ids.size() << " samples in " << f.row_count << " x "
              << f.topology.dp_slots << " cells, " << f.placement.layers << " MoE layers x " << f.placement.experts
              << " experts on " << f.placement.ep_ranks << " EP ranks\n";
    if (!c.src.given()) return 0;
    WindowSource src = c.src;
    if (!src.db.empty() && src.trace.empty()) src.trace = f.trace_name;
    std::string tn, wn;
    const Trace w = src.load(&tn, &wn, f.sample_ids);
    const std::string diff = rescore_plan(f, w);
    if (!diff.empty()) throw InputError(c.plan + ": does not match its trace: " + diff);
    std::cout << c.plan << ": rescored against trace '" << tn << "': identical score [" << fmt("%.6f", f.score.max_u)
              << ", " << fmt("%.6f", f.score.sum_u) << ", " << fmt("%.6f", f.score.max_j) << "] and metrics\n";
    return 0;
}

struct ExportMapCmd {
    std::string plan, format = "routepack", out;
};

int do_export_map(const ExportMapCmd& c) {
    const ExpertMapFormat f = parse_expert_map_format(c.format);
    const PlanFile p = parse_plan(read_text(c.plan, input_files::kPlan), c.plan);
    check_output_file(c.out, "--out");
    write_output(c.out, expert_map_json(p.placement, p.model, f), "expert map");
    std::cout << "expert map (" << c.format << ", rows = "
              << (f == ExpertMapFormat::SGLang ? "all " + std::to_string(p.model.num_hidden_layers) + " decoder layers"
                                               : std::to_string(p.model.num_moe_layers()) + " MoE layers")
              << ", " << p.model.experts << " experts) written to " << c.out << "\n";
    return 0;
}

struct PlaceCmd {
    WindowSource src;
    std::string loads, topology, format = "routepack", out;
    int ep_ranks = 0;
};

/// Reads `--loads FILE`: a JSON [L][E] array of non-negative whole numbers, or an object
/// {"loads": [L][E], "moe_layers": [...] (optional), "num_hidden_layers": N (optional)}.
/// The model gets E from the rows, moe_layers from the file, else --moe-layers, else 0..L-1.
std::vector<std::uint64_t> read_loads_file(const std::string& path, const ModelFlags& flags, ModelDescription* model) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) throw InputError(path + ": is a folder, not a loads file");
    const std::string text = read_text(path, input_files::kLoadsFile);
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(text);
    } catch (const nlohmann::json::parse_error& e) {
        throw InputError(path + ": malformed JSON at byte " + std::to_string(e.byte));
    }
    nlohmann::json rows = j;
    std::string field = "";
    if (j.is_object()) {
        if (!j.contains("loads")) throw InputError(path + ": missing field 'loads'");
        rows = j["loads"];
        field = "loads";
    }
    if (!rows.is_array() || rows.empty() || !rows[0].is_array() || rows[0].empty())
        throw InputError(path + ": " + (field.empty() ? std::string("the loads") : field) +
                         " must be a non-empty [L][E] list of lists");
    const std::size_t L = rows.size(), E = rows[0].size();
    std::vector<std::uint64_t> loads;
    loads.reserve(L * E);
    for (std::size_t l = 0; l < L; ++l) {
        const std::string at = field + "[" + std::to_string(l) + "]";
        if (!rows[l].is_array() || rows[l].size() != E)
            throw InputError(path + ": " + at + " must be a list of " + std::to_string(E) + " loads (as row 0)");
        for (std::size_t e = 0; e < E; ++e) {
            const auto& v = rows[l][e];
            const std::string where = path + ": " + at + "[" + std::to_string(e) + "]";
            if (v.is_number_unsigned()) {
                loads.push_back(v.get<std::uint64_t>());
            } else if (v.is_number_float() && std::isfinite(v.get<double>()) && v.get<double>() >= 0 &&
                       v.get<double>() == std::floor(v.get<double>()) && v.get<double>() < 1.8e19) {
                loads.push_back(static_cast<std::uint64_t>(v.get<double>()));
            } else {
                throw InputError(where + " must be a non-negative whole number (got " + v.dump() + ")");
            }
        }
    }
    ModelDescription m;
    m.name = "";
    m.experts = static_cast<int>(E);
    m.top_k = 1;
    if (j.is_object() && j.contains("moe_layers")) {
        try {
            m.moe_layers = j["moe_layers"].get<std::vector<int>>();
        } catch (const nlohmann::json::exception&) {
            throw InputError(path + ": moe_layers must be a list of layer ids");
        }
    } else if (!flags.moe_layers.empty()) {
        m.moe_layers = parse_layer_list(flags.moe_layers);
    } else {
        for (std::size_t l = 0; l < L; ++l) m.moe_layers.push_back(static_cast<int>(l));
    }
    if (m.moe_layers.size() != L)
        throw InputError(path + ": " + std::to_string(L) + " rows of loads but " + std::to_string(m.moe_layers.size()) +
                         " MoE layers named");
    m.num_hidden_layers = flags.layers > 0 ? flags.layers : m.moe_layers.back() + 1;
    if (j.is_object() && j.contains("num_hidden_layers")) {
        if (!j["num_hidden_layers"].is_number_integer())
            throw InputError(path + ": field 'num_hidden_layers' must be an integer");
        m.num_hidden_layers = j["num_hidden_layers"].get<int>();
    }
    m.source = path;
    m.validate();
    *model = m;
    return loads;
}

/// `routepack place`: LPT placement (the planner's stage 1) from expert totals alone; writes an
/// expert map and prints identity vs LPT max/mean rank load per layer.
int do_place(const PlaceCmd& c) {
    const ExpertMapFormat format = parse_expert_map_format(c.format);
    int P = c.ep_ranks;
    if (!c.topology.empty()) {
        if (P) throw InputError("place: give either --ep-ranks or --topology, not both");
        P = load_topology(c.topology).ep_ranks;
    }
    if (P < 1) throw InputError("place: give --ep-ranks P (or --topology)");
    check_output_file(c.out, "--out");
    {
        std::error_code ec;
        if (!c.loads.empty() && std::filesystem::equivalent(c.loads, c.out, ec))
            throw InputError(c.out + ": is the --loads file itself (--out names a new expert map file)");
    }
    ModelDescription model;
    std::vector<std::uint64_t> loads;
    std::string what;
    if (!c.loads.empty()) {
        if (c.src.given()) throw InputError("place: give either --loads FILE or the trace (--db/--input), not both");
        loads = read_loads_file(c.loads, c.src.model, &model);
        what = c.loads;
    } else if (!c.src.db.empty() && c.src.window.empty()) {
        if (c.src.trace.empty()) throw InputError("--db needs --trace NAME");
        auto lib = storage::Library::open(c.src.db, storage::OpenMode::ReadOnly);
        model = lib->trace(c.src.trace).model;
        loads = lib->layer_totals(c.src.trace);  // aggregate (load-only) traces included
        what = "trace '" + c.src.trace + "'";
    } else {
        std::string tn, wn;
        const Trace w = c.src.load(&tn, &wn);
        model = w.model;
        loads = aggregate_expert_loads(w.counts, w.size(), model.num_moe_layers(), model.experts);
        what = (wn.empty() ? "trace '" + tn + "'" : "window '" + wn + "' of '" + tn + "'") + " (" +
               std::to_string(w.size()) + " samples)";
    }
    const int L = model.num_moe_layers(), E = model.experts;
    if (E % P != 0)
        throw InputError("topology: " + std::to_string(E) + " experts are not divisible by " + std::to_string(P) +
                         " EP ranks");
    const Placement ident = identity_placement(L, E, P);
    const Placement lpt = lpt_placement(loads, L, E, P);
    const auto Gi = rank_loads(loads, ident), Gl = rank_loads(loads, lpt);
    const auto mi = rank_max_over_mean(Gi, L, P), ml = rank_max_over_mean(Gl, L, P);
    const std::string text = expert_map_json(lpt, model, format);
    write_output(c.out, text, "expert map");
    std::cout << "placement of " << what << ": " << L << " MoE layers x " << E << " experts on " << P
              << " EP ranks (LPT, Algorithm 1)\n";
    std::printf("%7s %14s %14s\n", "layer", "identity max/mean", "LPT max/mean");
    double si = 0, sl = 0;
    for (int l = 0; l < L; ++l) {
        std::printf("%7d %17.4f %14.4f\n", model.moe_layers[static_cast<std::size_t>(l)], mi[static_cast<std::size_t>(l)],
                    ml[static_cast<std::size_t>(l)]);
        si += mi[static_cast<std::size_t>(l)];
        sl += ml[static_cast<std::size_t>(l)];
    }
    std::printf("%7s %17.4f %14.4f\n", "mean", L ? si / L : 1.0, L ? sl / L : 1.0);
    std::fflush(stdout);
    std::cout << "CV_global: identity " << fmt("%.4f", cv_global(Gi, L, P)) << " -> LPT " << fmt("%.4f", cv_global(Gl, L, P))
              << "\n";
    std::cout << "expert map (" << c.format << ") written to " << c.out << "\n";
    return 0;
}

}  // namespace

/// Last resort for the one-line rule: any line break left in a message becomes a visible escape.
std::string one_line(std::string msg) {
    std::string out;
    out.reserve(msg.size());
    for (char ch : msg) {
        if (ch == '\n') out += "\\n";
        else if (ch == '\r') out += "\\r";
        else out.push_back(ch);
    }
    return out;
}

int run(int argc, char** argv) {
    CLI::App app{"routepack: plan MoE RL training steps from routing-replay traces (RoutePack)", "routepack"};
    app.require_subcommand(1);
    app.set_version_flag("--version", "routepack 0.1.0");

    ImportCmd ic;
    auto* imp = app.add_subcommand("import", "import routing traces (files or folders) into a library");
    imp->add_option("--db", ic.db, "library file (SQLite; created when absent)")->required();
    imp->add_option("--name", ic.name, "trace name")->required();
    imp->add_option("--format", ic.format, "auto, sglang, vllm, npy, npz, nested-json, nrlre1, megatron, step-json, prompt-csv, aggregate");
    ic.model.add(*imp);
    imp->add_flag("--quiet", ic.quiet, "no progress on stderr");
    imp->add_option("paths", ic.paths, "trace files or folders")->required();

    std::string info_db, info_trace;
    bool info_json = false;
    auto* info = app.add_subcommand("info", "list traces, sample counts, length statistics, per-layer load CV");
    info->add_option("--db", info_db, "library file")->required();
    info->add_option("--trace", info_trace, "only this trace, with per-layer detail");
    info->add_flag("--json", info_json, "machine-readable output");

    WindowCmd wc;
    auto* win = app.add_subcommand("window", "define an optimizer-step window (a named subset of a trace's samples)");
    win->add_option("--db", wc.db, "library file")->required();
    win->add_option("--trace", wc.trace, "trace name")->required();
    win->add_option("--name", wc.name, "window name")->required();
    win->add_option("--ids", wc.ids_file, "file with one sample id per line")->each([&](const std::string&) {
        wc.ids_given = true;
    });
    win->add_option("--first", wc.first, "first N samples in numeric-aware id order")->each([&](const std::string&) {
        wc.first_given = true;
    });
    win->add_option("--random", wc.random, "N samples drawn with --seed")->each([&](const std::string&) {
        wc.random_given = true;
    });
    win->add_option("--seed", wc.seed_text, "seed for --random (0..2^64-1)")->each([&](const std::string&) {
        wc.seed_given = true;
    });
    win->add_option("--split", wc.split, "cut the trace into consecutive windows of N samples (import order), "
                                         "named NAME-000, NAME-001, ...")
        ->each([&](const std::string&) { wc.split_given = true; });
    win->add_option("--split-groups", wc.split_groups, "cut the trace into consecutive windows of G whole GRPO groups")
        ->each([&](const std::string&) { wc.split_groups_given = true; });
    win->add_option("--groups", wc.groups, "comma-separated GRPO groups")->each([&](const std::string&) {
        wc.groups_given = true;
    });

    SynthCmd sc;
    auto* syn = app.add_subcommand("synth", "write a deterministic synthetic GRPO trace");
    syn->add_option("--out", sc.out, "output folder")->required();
    syn->add_option("--format", sc.format, "vllm (default), sglang, npz, nested-json, nrlre1");
    syn->add_option("--groups", sc.cfg.groups, "GRPO prompt groups");
    syn->add_option("--group-size", sc.cfg.group_size, "rollouts per prompt");
    syn->add_option("--layers", sc.cfg.num_hidden_layers, "decoder layers");
    syn->add_option("--dense-layers", sc.cfg.first_dense_layers, "leading dense layers");
    syn->add_option("--experts", sc.cfg.experts, "experts per MoE layer");
    syn->add_option("--top-k", sc.cfg.top_k, "experts per token");
    syn->add_option("--prompt-mean", sc.cfg.prompt_mean, "mean prompt tokens");
    syn->add_option("--response-mean", sc.cfg.response_mean, "mean response tokens");
    syn->add_option("--max-length", sc.cfg.max_length, "cap on sample length");
    syn->add_option("--skew", sc.cfg.skew, "Zipf exponent of expert popularity");
    syn->add_option("--seed", sc.cfg.seed, "random seed");

    SynthCheckpointCmd skc;
    auto* synck = app.add_subcommand("synth-checkpoint",
                                     "write a small sharded safetensors checkpoint shaped like the model (HF DeepSeek-V2 names)");
    synck->add_option("--out", skc.out, "output folder (must not exist or be empty)");
    synck->add_option("--check", skc.check,
                      "check instead: every expert slot of a (rewritten) synthetic checkpoint holds the expected expert");
    synck->add_option("--model", skc.model, "shipped model description (default deepseek-v2-lite)");
    synck->add_option("--hidden", skc.cfg.hidden, "hidden size (default 16)");
    synck->add_option("--max-shard-bytes", skc.cfg.max_shard_bytes, "largest shard data size (default 1048576)");

    DemoCmd dc;
    auto* demo = app.add_subcommand("demo", "run the main job on the embedded demo input (synthetic GRPO window)");
    demo->add_option("--out", dc.out, "output folder (default routepack-demo)");

    PlanCmd pc;
    pc.command = "plan";
    auto* plan = app.add_subcommand("plan", "plan a window: LPT placement, certified rows, RoutePack packing; writes the plan JSON");
    pc.src.add(*plan);
    add_budget_flags(*plan, pc);
    plan->add_option("--out", pc.out, "plan file to write")->required();
    plan->add_flag("--json", pc.json, "print the comparison as JSON");
    plan->add_flag("--quiet", pc.quiet, "no progress on stderr");

    PlanCmd cc;
    cc.command = "compare";
    auto* cmp = app.add_subcommand("compare", "compare baseline / reorder / karmarkar-karp / routepack on a window");
    cc.src.add(*cmp);
    add_budget_flags(*cmp, cc);
    cmp->add_flag("--json", cc.json, "machine-readable output");
    cmp->add_flag("--quiet", cc.quiet, "no progress on stderr");

    SweepCmd swc;
    swc.plan.command = "sweep";
    auto* sweep = app.add_subcommand("sweep", "plan every window of a trace (a whole run) and report per-window costs, gains and placement churn");
    sweep->add_option("--db", swc.db, "library file")->required();
    sweep->add_option("--trace", swc.trace, "trace name")->required();
    sweep->add_option("--windows", swc.windows, "shell pattern of window names (default *: every window)");
    sweep->add_option("--out", swc.out, "folder for sweep.csv, sweep.json and one plan JSON per window")
        ->each([&](const std::string&) { swc.out_given = true; });
    sweep->add_option("--expert-bytes", swc.expert_bytes,
                      "bytes of one expert's parameters plus optimizer state per replica (churn in bytes)");
    add_budget_flags(*sweep, swc.plan);
    sweep->add_flag("--json", swc.plan.json, "print the table as JSON");
    sweep->add_flag("--quiet", swc.plan.quiet, "no progress on stderr");

    ValidateCmd vc;
    auto* val = app.add_subcommand("validate", "check a plan's structure, and rescore it against its trace when given one");
    val->add_option("plan", vc.plan, "plan JSON")->required();
    vc.src.add(*val, false);

    ExportMapCmd ec;
    auto* exm = app.add_subcommand("export-map", "export a plan's placement as physical_to_logical_map (routepack, sglang, vllm)");
    exm->add_option("--plan", ec.plan, "plan JSON")->required();
    exm->add_option("--format", ec.format, "routepack (default; rows = MoE layers), sglang (rows = all decoder layers), vllm (rows = MoE layers)");
    exm->add_option("--out", ec.out, "output file")->required();

    PlaceCmd plc;
    auto* plcmd = app.add_subcommand("place", "LPT placement from expert totals alone (a trace, window, aggregate trace or --loads FILE); writes an expert map");
    plcmd->add_option("--db", plc.src.db, "library file");
    plcmd->add_option("--trace", plc.src.trace, "trace name in the library (aggregate traces too)");
    plcmd->add_option("--window", plc.src.window, "window name (default: the whole trace)");
    plcmd->add_option("--input", plc.src.inputs, "trace files or folders read straight (no library)");
    plcmd->add_option("--input-format", plc.src.format, "format of --input (default auto)");
    plc.src.model.add(*plcmd);
    plcmd->add_option("--loads", plc.loads, "JSON [L][E] expert loads, or {\"loads\", \"moe_layers\", \"num_hidden_layers\"}");
    plcmd->add_option("--ep-ranks", plc.ep_ranks, "EP ranks P");
    plcmd->add_option("--topology", plc.topology, "take P from a topology file or shipped name");
    plcmd->add_option("--format", plc.format, "routepack (default), sglang, vllm");
    plcmd->add_option("--out", plc.out, "expert map file to write")->required();

    RewriteCliOptions rwc;
    auto* rw = app.add_subcommand("rewrite",
                                  "rewrite a checkpoint so that expert state follows a plan's placement (or back)");
    add_rewrite_options(*rw, rwc);

    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForVersion& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        std::string msg = e.what();
        std::replace(msg.begin(), msg.end(), '\n', ' ');
        std::cerr << "routepack: error: " << msg << " (see routepack --help)\n";
        return 2;
    }

    std::string command = "routepack";
    for (const auto* sub : app.get_subcommands()) command = sub->get_name();
    try {
        if (*imp) return do_import(ic);
        if (*info) {
            check_db_path(info_db);
            auto lib = storage::Library::open(info_db, storage::OpenMode::ReadOnly);
            nlohmann::json all = nlohmann::json::array();
            if (!info_trace.empty()) {
                all.push_back(trace_json(*lib, lib->trace(info_trace), true));
            } else {
                for (const auto& t : lib->traces()) all.push_back(trace_json(*lib, t, false));
            }
            if (info_json) {
                std::cout << nlohmann::json{{"library", info_db}, {"traces", all}}.dump(2) << "\n";
            } else {
                std::cout << "library " << shown_path(info_db) << ": " << all.size() << " trace(s)\n";
                for (const auto& t : all) print_trace_text(t, !info_trace.empty());
            }
            return 0;
        }
        if (*win) return do_window(wc);
        if (*syn) return do_synth(sc);
        if (*synck) return do_synth_checkpoint(skc);
        if (*demo) return do_demo(dc);
        if (*plan) return do_plan(pc, true);
        if (*cmp) return do_plan(cc, false);
        if (*sweep) return do_sweep(swc);
        if (*val) return do_validate(vc);
        if (*exm) return do_export_map(ec);
        if (*plcmd) return do_place(plc);
        if (*rw) return run_rewrite_cli(rwc, std::cout, std::cerr);
    } catch (const Cancelled&) {
        std::cerr << "routepack: cancelled; nothing was changed\n";
        return 130;
    } catch (const std::bad_alloc&) {
        std::cerr << "routepack: error: out of memory while running '" << command << "'\n";
        return 1;
    } catch (const InputError& e) {
        std::cerr << "routepack: error: " << one_line(e.what()) << "\n";
        return 1;
    } catch (const nlohmann::json::exception& e) {
        std::cerr << "routepack: error: " << one_line(util::json_error_description(e)) << "\n";
        return 1;
    } catch (const std::filesystem::filesystem_error& e) {
        const std::string p = e.path1().empty() ? std::string() : e.path1().string() + ": ";
        std::cerr << "routepack: error: " << one_line(p + e.code().message()) << "\n";
        return 1;
    } catch (const std::exception& e) {
        std::cerr << "routepack: error: " << one_line(e.what()) << "\n";
        return 1;
    }
    return 2;
}

}  // namespace routepack::cli
