#pragma once
// Error types of the core library. Bad input is reported by throwing InputError whose message
// names the file, sample or field (MissingFileError when a file it names does not exist); callers
// at the boundary (CLI, storage, views) turn it into a value / one line on stderr. Anything else
// thrown is a broken contract.
//
// A message about a setting the user gives (a planner budget, a window selector, a name) carries
// that setting as a Setting: the library's own text (what()) names it in plain words or by its key,
// never by a CLI flag, and each front end words it its own way from the key: the CLI by its flag
// (app/cli_errors.h), the studio by the label of the field that sets it (views/widgets/gui_text.h).
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace routepack {

/// The setting an InputError is about.
struct Setting {
    /// Its key: a planner budget's JSON key ("steps_per_level", core/plan/budgets.h), a window
    /// selector ("first", "random", "split", "split_groups"), a name ("trace_name", "window_name",
    /// "topology_name"), a model or synth field ("moe_layers", "top_k", "num_hidden_layers",
    /// core/synth/synth.h SynthConfig), the router trace's "router_layer_base", a rewrite option
    /// ("rewrite_layer_map", gpu/rewrite/request.h rewrite_setting), a format of a file to give
    /// ("export_map_routepack"), or a request for one of several ways to give something, rendered
    /// as a whole phrase with its verb ("ask_model", "ask_expert_count", "ask_moe_layers",
    /// "ask_format", core/import).
    std::string key;
    /// The value the message quotes, as text ("40"); empty when the message quotes none there.
    std::string value;
    /// How the library's own text names it, value included ("budget 'steps_per_level'",
    /// "split 40", "trace name").
    std::string words;
};

/// Bad input (a file, a field, a flag). `what()` is one line meant for the user.
class InputError : public std::runtime_error {
public:
    /// A setting the message names and the text that follows it.
    struct Named {
        Setting setting;
        std::string after;
    };

    explicit InputError(const std::string& message) : std::runtime_error(message) {}
    /// An error about `setting`: what() is `before` + setting.words + `after`.
    InputError(std::string before, Setting setting, std::string after)
        : InputError(std::move(before), {Named{std::move(setting), std::move(after)}}) {}
    /// An error about several settings ("top_k 9 exceeds experts 8"): what() is `before`, then each
    /// setting's words followed by its text. `named` is not empty.
    InputError(std::string before, std::vector<Named> named)
        : std::runtime_error(joined(before, named, [](const Setting& s) { return s.words; })),
          parts_(std::make_shared<const Parts>(Parts{std::move(before), std::move(named)})) {}

    /// The (first) setting the message is about; nullptr when it names none.
    const Setting* setting() const { return parts_ ? &parts_->named.front().setting : nullptr; }
    /// Every setting the message names, in order; empty when it names none.
    std::vector<Setting> settings() const {
        std::vector<Setting> out;
        if (parts_)
            for (const Named& n : parts_->named)
                out.push_back(n.setting);
        return out;
    }
    /// The message with each setting named by `name(setting)` instead of setting.words (what() when
    /// the message names no setting). `name` is any callable taking a const Setting& and returning
    /// a std::string.
    template <class Name> std::string reworded(Name&& name) const {
        if (!parts_) return what();
        return joined(parts_->before, parts_->named, name);
    }

private:
    template <class Name>
    static std::string joined(const std::string& before, const std::vector<Named>& named, Name&& name) {
        std::string out = before;
        for (const Named& n : named)
            out += std::string(name(n.setting)) + n.after;
        return out;
    }
    struct Parts {
        std::string before;
        std::vector<Named> named;
    };
    std::shared_ptr<const Parts> parts_; ///< shared: copying an exception does not throw
};

/// Bad input because a file or folder the input names does not exist: the message names it
/// ("<path>: no such plan file"), path() gives it. Front ends that tell a missing file apart (the
/// Python module's MissingFileError, a FileNotFoundError) catch it before InputError; the others
/// handle it as any InputError.
class MissingFileError : public InputError {
public:
    MissingFileError(const std::string& message, std::filesystem::path path)
        : InputError(message), path_(std::make_shared<const std::filesystem::path>(std::move(path))) {}
    /// The path that does not exist, as the input gave it.
    const std::filesystem::path& path() const { return *path_; }

private:
    std::shared_ptr<const std::filesystem::path> path_; ///< shared: copying an exception does not throw
};

/// Thrown by long operations when their cooperative cancel flag was set.
class Cancelled : public std::runtime_error {
public:
    Cancelled() : std::runtime_error("cancelled") {}
};

} // namespace routepack
