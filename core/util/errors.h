#pragma once
// Error types of the core library. Bad input is reported by throwing InputError whose message
// names the file, sample or field; callers at the boundary (CLI, storage, views) turn it into
// a value / one line on stderr. Anything else thrown is a broken contract.
#include <stdexcept>
#include <string>

namespace routepack {

/// Bad input (a file, a field, a flag). `what()` is one line meant for the user.
class InputError : public std::runtime_error {
public:
    explicit InputError(const std::string& message) : std::runtime_error(message) {}
};

/// Thrown by long operations when their cooperative cancel flag was set.
class Cancelled : public std::runtime_error {
public:
    Cancelled() : std::runtime_error("cancelled") {}
};

} // namespace routepack
