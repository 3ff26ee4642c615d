#pragma once
// Error types of the core library. Bad input is reported by throwing InputError whose message
// names the file, sample or field; callers at the boundary (CLI, storage, views) turn it into
// a value / one line on stderr. Anything else thrown is a broken contract.
//
// A message about a setting the user gives (a planner budget, a window selector, a name) carries
// that setting as a Setting: the library's own text (what()) names it in plain words or by its key,
// never by a CLI flag, and each front end words it its own way from the key: the CLI by its flag
// (app/cli_errors.h), the studio by the label of the field that sets it (views/gui_text.h).
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

namespace routepack {

/// The setting an InputError is about.
struct Setting {
    /// Its key: a planner budget's JSON key ("steps_per_level", core/plan/budget_table.h), a window
    /// selector ("first", "random", "split", "split_groups"), or a name ("trace_name",
    /// "window_name", "topology_name").
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
    explicit InputError(const std::string& message) : std::runtime_error(message) {}
    /// An error about `setting`: what() is `before` + setting.words + `after`.
    InputError(std::string before, Setting setting, std::string after)
        : std::runtime_error(before + setting.words + after),
          parts_(std::make_shared<const Parts>(Parts{std::move(before), std::move(setting), std::move(after)})) {}

    /// The setting the message is about; nullptr when it names none.
    const Setting* setting() const { return parts_ ? &parts_->setting : nullptr; }
    /// The message with its setting named by `name(setting)` instead of setting.words (what() when
    /// the message names no setting). `name` is any callable taking a const Setting& and returning
    /// a std::string.
    template <class Name> std::string reworded(Name&& name) const {
        if (!parts_) return what();
        return parts_->before + std::string(name(parts_->setting)) + parts_->after;
    }

private:
    struct Parts {
        std::string before;
        Setting setting;
        std::string after;
    };
    std::shared_ptr<const Parts> parts_; ///< shared: copying an exception does not throw
};

/// Thrown by long operations when their cooperative cancel flag was set.
class Cancelled : public std::runtime_error {
public:
    Cancelled() : std::runtime_error("cancelled") {}
};

} // namespace routepack
