#include "app/cli.h"

#include "core/errors.h"
#include "core/import.h"
#include "core/synth.h"
#include "gpu/device.h"
#include "storage/library.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <numeric>
#include <set>
#include <sstream>
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
            std::ifstream in(model_config, std::ios::binary);
            if (!in) throw InputError(model_config + ": cannot open model config");
            std::stringstream ss;
            ss << in.rdbuf();
            m = model_from_hf_config(ss.str(), model_config);
        }
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

void print_trace_text(const nlohmann::json& j, bool detail) {
    std::cout << "trace " << j["name"].get<std::string>() << "  (" << j["format"].get<std::string>()
              << (j["load_only"].get<bool>() ? ", load-only" : "") << ")\n";
    const auto& m = j["model"];
    std::cout << "  model     " << (m["name"].get<std::string>().empty() ? "-" : m["name"].get<std::string>()) << ": "
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
        std::cout << "  window    " << w["name"].get<std::string>() << ": " << w["samples"] << " samples ("
                  << w["definition"].get<std::string>() << ")\n";
}

/// Deterministic PRNG for --random (splitmix64), independent of the standard library.
std::uint64_t splitmix64(std::uint64_t& s) {
    std::uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

std::vector<std::string> split_list(const std::string& s) {
    std::vector<std::string> out;
    std::string cur;
    std::stringstream ss(s);
    while (std::getline(ss, cur, ','))
        if (!cur.empty()) out.push_back(cur);
    return out;
}

struct ImportCmd {
    std::string db, name, format = "auto";
    ModelFlags model;
    std::vector<std::string> paths;
    bool quiet = false;
};

int do_import(const ImportCmd& c) {
    ImportOptions opt;
    opt.format = parse_trace_format(c.format);
    opt.model = c.model.resolve();
    auto lib = storage::Library::open(c.db);
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
        throw;
    }
    if (tty) std::fputs("\n", stderr);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::cout << "imported trace '" << c.name << "' into " << c.db << ": " << s.samples << " samples from " << s.files
              << " files (" << human_bytes(s.bytes) << ", format " << to_string(s.format) << ") in "
              << fmt("%.2f", secs) << " s\n";
    const auto& m = s.model;
    std::cout << "  model    " << (m.name.empty() ? "-" : m.name) << ": " << m.num_moe_layers() << " MoE layers ("
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
    for (const auto& n : s.notes) std::cout << "  note: " << n << "\n";
    return 0;
}

struct WindowCmd {
    std::string db, trace, name, ids_file, groups;
    std::size_t first = 0, random = 0;
    std::uint64_t seed = 0;
    bool seed_given = false;
};

int do_window(const WindowCmd& c) {
    const int modes = (!c.ids_file.empty()) + (c.first > 0) + (c.random > 0) + (!c.groups.empty());
    if (modes != 1) throw InputError("window: give exactly one of --ids FILE, --first N, --random N --seed S, --groups LIST");
    if (c.random > 0 && !c.seed_given) throw InputError("window: --random needs --seed S (plans must be reproducible)");
    auto lib = storage::Library::open(c.db, false);
    const auto samples = lib->samples(c.trace);
    std::vector<std::string> ids;
    std::string definition;
    if (!c.ids_file.empty()) {
        std::ifstream in(c.ids_file);
        if (!in) throw InputError(c.ids_file + ": cannot open id list");
        std::string line;
        while (std::getline(in, line)) {
            while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
            if (line.empty() || line[0] == '#') continue;
            ids.push_back(line);
        }
        if (ids.empty()) throw InputError(c.ids_file + ": no sample ids");
        definition = "ids from " + c.ids_file;
    } else if (c.first > 0) {
        if (c.first > samples.size())
            throw InputError("window: --first " + std::to_string(c.first) + " but trace '" + c.trace + "' has only " +
                             std::to_string(samples.size()) + " samples");
        for (const auto& s : samples) ids.push_back(s.id);
        std::sort(ids.begin(), ids.end(), natural_less);
        ids.resize(c.first);
        definition = "first " + std::to_string(c.first) + " in numeric id order";
    } else if (c.random > 0) {
        if (c.random > samples.size())
            throw InputError("window: --random " + std::to_string(c.random) + " but trace '" + c.trace + "' has only " +
                             std::to_string(samples.size()) + " samples");
        std::vector<std::size_t> idx(samples.size());
        std::iota(idx.begin(), idx.end(), 0);
        std::uint64_t state = c.seed;
        for (std::size_t i = 0; i < c.random; ++i) {
            const std::size_t j = i + splitmix64(state) % (idx.size() - i);
            std::swap(idx[i], idx[j]);
        }
        idx.resize(c.random);
        std::sort(idx.begin(), idx.end());
        for (auto i : idx) ids.push_back(samples[i].id);
        definition = "random " + std::to_string(c.random) + " seed " + std::to_string(c.seed);
    } else {
        const auto wanted = split_list(c.groups);
        std::set<std::string> have;
        for (const auto& s : samples)
            if (!s.group.empty()) have.insert(s.group);
        if (have.empty()) throw InputError("window: trace '" + c.trace + "' has no GRPO groups");
        for (const auto& g : wanted)
            if (!have.count(g)) throw InputError("window: trace '" + c.trace + "' has no group '" + g + "'");
        const std::set<std::string> want(wanted.begin(), wanted.end());
        for (const auto& s : samples)
            if (want.count(s.group)) ids.push_back(s.id);
        definition = "groups " + c.groups;
    }
    const auto w = lib->create_window(c.trace, c.name, ids, definition);
    std::cout << "window '" << w.name << "' of trace '" << c.trace << "': " << w.samples << " samples (" << definition
              << ")\n";
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

struct DemoCmd {
    std::string out = "routepack-demo";
};

/// The main job on the embedded demo input: synthesize a GRPO window, import it into a fresh
/// library, define the window and print what the library holds.
int do_demo(const DemoCmd& c) {
    const std::filesystem::path out(c.out);
    std::filesystem::create_directories(out);
    const auto db = out / "demo.routepack";
    const auto traces = out / "trace";
    std::filesystem::remove(db);
    std::filesystem::remove(db.string() + "-wal");
    std::filesystem::remove(db.string() + "-shm");
    std::filesystem::remove_all(traces);
    SynthConfig cfg;  // the embedded demo: 8 GRPO groups x 8 rollouts
    const auto files = write_synth(cfg, TraceFormat::VLLM, traces);
    std::cout << "demo: wrote " << files.size() << " synthetic vLLM response files (" << cfg.groups << " GRPO groups x "
              << cfg.group_size << " rollouts) to " << traces.string() << "\n";
    auto lib = storage::Library::open(db);
    ImportOptions opt;
    opt.format = TraceFormat::VLLM;
    opt.model = synth_model(cfg);
    const auto s = lib->import_trace("demo", {traces}, opt);
    std::cout << "demo: imported " << s.samples << " samples into " << db.string() << "\n";
    std::vector<std::string> ids;
    for (const auto& x : lib->samples("demo")) ids.push_back(x.id);
    lib->create_window("demo", "step-0", ids, "all samples of the demo GRPO window");
    print_trace_text(trace_json(*lib, lib->trace("demo"), true), true);
    std::cout << "demo: devices: " << gpu::query_devices().description << "\n";
    return 0;
}

}  // namespace

int run(int argc, char** argv) {
    CLI::App app{"routepack: plan MoE RL training steps from routing-replay traces (RoutePack)", "routepack"};
    app.require_subcommand(1);
    app.set_version_flag("--version", "routepack 0.1.0");

    ImportCmd ic;
    auto* imp = app.add_subcommand("import", "import routing traces (files or folders) into a library");
    imp->add_option("--db", ic.db, "library file (SQLite; created when absent)")->required();
    imp->add_option("--name", ic.name, "trace name")->required();
    imp->add_option("--format", ic.format, "auto, sglang, vllm, npy, npz, nested-json, nrlre1, step-json, prompt-csv, aggregate");
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
    win->add_option("--ids", wc.ids_file, "file with one sample id per line");
    win->add_option("--first", wc.first, "first N samples in numeric-aware id order");
    win->add_option("--random", wc.random, "N samples drawn with --seed");
    win->add_option("--seed", wc.seed, "seed for --random")->each([&](const std::string&) { wc.seed_given = true; });
    win->add_option("--groups", wc.groups, "comma-separated GRPO groups");

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

    DemoCmd dc;
    auto* demo = app.add_subcommand("demo", "run the main job on the embedded demo input (synthetic GRPO window)");
    demo->add_option("--out", dc.out, "output folder (default routepack-demo)");

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

    try {
        if (*imp) return do_import(ic);
        if (*info) {
            auto lib = storage::Library::open(info_db, false);
            nlohmann::json all = nlohmann::json::array();
            if (!info_trace.empty()) {
                all.push_back(trace_json(*lib, lib->trace(info_trace), true));
            } else {
                for (const auto& t : lib->traces()) all.push_back(trace_json(*lib, t, false));
            }
            if (info_json) {
                std::cout << nlohmann::json{{"library", info_db}, {"traces", all}}.dump(2) << "\n";
            } else {
                std::cout << "library " << info_db << ": " << all.size() << " trace(s)\n";
                for (const auto& t : all) print_trace_text(t, !info_trace.empty());
            }
            return 0;
        }
        if (*win) return do_window(wc);
        if (*syn) return do_synth(sc);
        if (*demo) return do_demo(dc);
    } catch (const Cancelled&) {
        std::cerr << "routepack: cancelled; nothing was changed\n";
        return 130;
    } catch (const InputError& e) {
        std::cerr << "routepack: error: " << e.what() << "\n";
        return 1;
    } catch (const std::exception& e) {
        std::cerr << "routepack: error: " << e.what() << "\n";
        return 1;
    }
    return 2;
}

}  // namespace routepack::cli
